// Command browse plays the browser's part of scripts/tour.sh: it opens an
// authorization URL, signs in with the login and password it is given, chooses
// Allow on the consent page and prints the URL oauthd redirected to (the
// client's redirect URI with code, state and iss). It is what a person does
// by hand in the README's tour.
//
//	go run ./scripts/browse AUTHORIZE_URL LOGIN PASSWORD
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"oauthd/consent/consenttest"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: browse AUTHORIZE_URL LOGIN PASSWORD")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	to, err := consenttest.New().Authorize(ctx, os.Args[1], os.Args[2], os.Args[3], true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browse:", err)
		os.Exit(1)
	}
	fmt.Println(to)
}
