// An independent OAuth client (oauth4webapi) for oauthd's DPoP and PAR
// end-to-end test. The Go test (cmd/oauthd/oauth4webapi_test.go) starts it
// with the environment below and talks to it over stdin/stdout, one JSON
// object a line:
//   node → {"step":"authorize","url":…}   the PAR'd authorization URL
//   Go   → {"callback":…}                 the redirect after login + consent
//   node → {"step":"done", …}             what happened, for the Go side to check
// ISSUER, CLIENT_ID, REDIRECT_URI, GATEWAY_URL (optional), DPOP_ALG.
import * as oauth from 'oauth4webapi'
import * as readline from 'node:readline'

const issuer = new URL(process.env.ISSUER)
const client = { client_id: process.env.CLIENT_ID }
const redirectUri = process.env.REDIRECT_URI
const alg = process.env.DPOP_ALG || 'ES256'
const insecure = { [oauth.allowInsecureRequests]: true } // loopback http only

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

// Every DPoP header sent, by request, so that the Go side can replay one.
const sent = []
const recordingFetch = async (url, init) => {
  const h = new Headers(init?.headers)
  if (h.has('dpop')) sent.push({ url: String(url), method: init?.method || 'GET', dpop: h.get('dpop'), authorization: h.get('authorization') })
  return fetch(url, init)
}
const opts = (extra) => ({ ...insecure, [oauth.customFetch]: recordingFetch, ...extra })

const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }))
if (!as.pushed_authorization_request_endpoint) throw new Error('no pushed_authorization_request_endpoint in the metadata')
if (!as.dpop_signing_alg_values_supported?.includes(alg)) throw new Error(`metadata does not list ${alg} in dpop_signing_alg_values_supported`)

const keyPair = await oauth.generateKeyPair(alg)
const DPoP = oauth.DPoP(client, keyPair)
const clientAuth = oauth.None()

// PAR (RFC 9126), with PKCE.
const codeVerifier = oauth.generateRandomCodeVerifier()
const state = oauth.generateRandomState()
const params = new URLSearchParams({
  redirect_uri: redirectUri,
  scope: 'PROFILE_READ',
  response_type: 'code',
  code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
  code_challenge_method: 'S256',
  state,
})
const par = await oauth.processPushedAuthorizationResponse(as, client,
  await oauth.pushedAuthorizationRequest(as, client, clientAuth, params, opts()))
const authURL = new URL(as.authorization_endpoint)
authURL.searchParams.set('client_id', client.client_id)
authURL.searchParams.set('request_uri', par.request_uri)
out({ step: 'authorize', url: authURL.href, expires_in: par.expires_in })

const { value: line } = await lines.next()
const callback = new URL(JSON.parse(line).callback)
const cbParams = oauth.validateAuthResponse(as, client, callback, state)

// Code exchange with DPoP (RFC 9449 §5).
const tokens = await oauth.processAuthorizationCodeResponse(as, client,
  await oauth.authorizationCodeGrantRequest(as, client, clientAuth, cbParams, redirectUri, codeVerifier, opts({ DPoP })))
if (tokens.token_type.toLowerCase() !== 'dpop') throw new Error(`token_type ${tokens.token_type}, want DPoP`)

// /v2/me with a DPoP proof (RFC 9449 §7).
const callMe = async (base, access) => {
  const res = await oauth.protectedResourceRequest(access, 'GET', new URL('/v2/me', base), undefined, undefined, opts({ DPoP }))
  return { status: res.status, body: await res.text() }
}
const me = await callMe(issuer, tokens.access_token)
const meProof = sent.at(-1)
let gateway, gatewayProof
if (process.env.GATEWAY_URL) {
  gateway = await callMe(new URL(process.env.GATEWAY_URL), tokens.access_token)
  gatewayProof = sent.at(-1)
}

// Refresh with DPoP: the refresh token of a public client is bound to the key.
const refreshed = await oauth.processRefreshTokenResponse(as, client,
  await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token, opts({ DPoP })))
const me2 = await callMe(issuer, refreshed.access_token)

out({
  step: 'done',
  token_type: tokens.token_type,
  access_token: tokens.access_token,
  refresh_token: refreshed.refresh_token,
  refreshed_access_token: refreshed.access_token,
  refreshed_token_type: refreshed.token_type,
  me, gateway, me2,
  me_request: meProof,
  gateway_request: gatewayProof,
})
process.exit(0)
