module oauthd

go 1.26.8
