// The relying party of cmd/oauthd/openidclient_test.go: openid-client (a
// certified OpenID Connect RP library) signs a user in against oauthd.
// The Go test is the user's browser: this program prints
// {"step":"authorize","name":…,"url":…} and reads back {"callback":…} (the
// URL the browser was redirected to), and {"step":"logout","url":…} for
// the end-session request. Every check openid-client makes (discovery,
// state, iss, PKCE, nonce, ID token signature, iss/aud/exp/iat/azp,
// auth_time against max_age, userinfo sub; it does not check at_hash in
// the code flow, go-oidc's test does) throws on failure,
// which ends the program with an error. It prints what it saw last as
// {"step":"done",…}.
import * as client from 'openid-client';
import * as readline from 'node:readline';

const { ISSUER, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, LOGOUT_URI } = process.env;
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const say = (v) => process.stdout.write(JSON.stringify(v) + '\n');
async function callback() {
  const { value, done } = await lines.next();
  if (done) throw new Error('stdin closed');
  return new URL(JSON.parse(value).callback);
}

const config = await client.discovery(new URL(ISSUER), CLIENT_ID, CLIENT_SECRET, undefined,
  { execute: [client.allowInsecureRequests] });

// authorize runs one authorization request through the browser and the
// code grant, with every check on.
async function authorize(name, extra = {}, maxAge) {
  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI, scope: 'openid profile email', state, nonce,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
  });
  say({ step: 'authorize', name, url: url.href });
  const cb = await callback();
  const tokens = await client.authorizationCodeGrant(config, cb,
    { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: state, idTokenExpected: true, maxAge });
  return { tokens, claims: tokens.claims(), nonce };
}

const out = { step: 'done' };
// 1. Sign in: login and consent in the browser.
const first = await authorize('signin');
out.claims = first.claims;
out.nonceMatched = first.claims.nonce === first.nonce;
// 2. userinfo, with the ID token's sub as the expected subject.
out.userinfo = await client.fetchUserInfo(config, first.tokens.access_token, first.claims.sub);
// 3. Refresh: a new ID token for the same sub and auth_time.
const refreshed = await client.refreshTokenGrant(config, first.tokens.refresh_token);
out.refreshedClaims = refreshed.claims();
// 4. prompt=none with the browser's session: no page, a code.
out.silent = (await authorize('silent', { prompt: 'none' })).claims;
// 5. prompt=none from a browser without a session: login_required.
try {
  await authorize('fresh-browser', { prompt: 'none' });
  out.noSession = 'a code';
} catch (err) {
  out.noSession = err.error ?? String(err);
}
// 6. max_age=1 after more than a second: a new login, a later auth_time
// (openid-client checks auth_time against maxAge).
out.maxAge = (await authorize('max-age', { max_age: '1' }, 1)).claims;
// 7. RP-initiated logout with the refreshed ID token as the hint.
const logout = client.buildEndSessionUrl(config, {
  id_token_hint: refreshed.id_token, post_logout_redirect_uri: LOGOUT_URI, state: 'bye',
});
say({ step: 'logout', url: logout.href });
await callback();
say(out);
rl.close();
