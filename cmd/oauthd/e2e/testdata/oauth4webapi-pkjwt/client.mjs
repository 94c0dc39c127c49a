// An independent OAuth client (oauth4webapi) for oauthd's private_key_jwt
// end-to-end test (cmd/oauthd/e2e/machines_test.go), one JSON object a
// line on stdin/stdout:
//   node → {"step":"jwks","jwks":…}       the public JWK set to register
//   Go   → {"client_id":…}                the client made with it
//   node → {"step":"done","tokens":[…]}   two client_credentials grants
// ISSUER.
import * as oauth from 'oauth4webapi'
import * as readline from 'node:readline'

const issuer = new URL(process.env.ISSUER)
const insecure = { [oauth.allowInsecureRequests]: true } // loopback http only
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }))
if (!as.token_endpoint_auth_methods_supported?.includes('private_key_jwt')) throw new Error('metadata does not list private_key_jwt')
if (!as.token_endpoint_auth_signing_alg_values_supported?.includes('ES256')) throw new Error('metadata does not list ES256 for private_key_jwt')

const { privateKey, publicKey } = await oauth.generateKeyPair('ES256', { extractable: true })
const jwk = await crypto.subtle.exportKey('jwk', publicKey)
const kid = 'node-k1'
out({ step: 'jwks', jwks: { keys: [{ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, kid, alg: 'ES256', use: 'sig' }] } })

const { value: line } = await lines.next()
const client = { client_id: JSON.parse(line).client_id }
const clientAuth = oauth.PrivateKeyJwt({ key: privateKey, kid })

const tokens = []
for (let i = 0; i < 2; i++) { // a new assertion (jti) each time
  const res = await oauth.processClientCredentialsResponse(as, client,
    await oauth.clientCredentialsGrantRequest(as, client, clientAuth, new URLSearchParams({ scope: 'BOOKING_READ' }), insecure))
  tokens.push({ access_token: res.access_token, token_type: res.token_type, scope: res.scope, refresh_token: res.refresh_token ?? null })
}
out({ step: 'done', tokens })
