// The official MCP TypeScript SDK's client, for oauthd's MCP end-to-end
// test (cmd/oauthd/e2e/mcp_test.go). Its own auth() discovers oauthd from
// the gateway's 401 (RFC 9728), identifies itself with the client ID
// metadata document at CLIENT_METADATA_URL, sends resource (RFC 8707) and
// PKCE; the test plays the user and writes {"callback": URL} back. Lines
// of JSON on stdout say each step; {"again": true} on stdin calls the
// tool once more (after the user removed access).
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const MCP_URL = new URL(process.env.MCP_URL);
const REDIRECT = process.env.REDIRECT_URI;
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (v) => console.log(JSON.stringify(v));

let tokens, verifier, clientInfo;
const provider = {
  get redirectUrl() { return REDIRECT; },
  clientMetadataUrl: process.env.CLIENT_METADATA_URL,
  get clientMetadata() {
    return { client_name: 'oauthd e2e assistant', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return clientInfo; },
  saveClientInformation(i) { clientInfo = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  redirectToAuthorization(url) { say({ step: 'authorize', url: url.toString() }); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(MCP_URL, { authProvider: provider });
  const client = new Client({ name: 'oauthd-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

let transport = new StreamableHTTPClientTransport(MCP_URL, { authProvider: provider });
try {
  await new Client({ name: 'oauthd-e2e', version: '1.0.0' }).connect(transport);
  say({ step: 'error', error: 'connected without authorization' });
  process.exit(1);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
const { callback } = JSON.parse((await lines.next()).value);
await transport.finishAuth(new URL(callback).searchParams.get('code'));
const { client } = await connect();
const result = await client.callTool({ name: 'whoami', arguments: {} });
say({ step: 'tool', text: result.content[0].text, access_token: tokens.access_token, scope: tokens.scope });

for await (const line of lines) {
  if (!JSON.parse(line).again) continue;
  try {
    const r = await client.callTool({ name: 'whoami', arguments: {} });
    say({ step: 'again', ok: true, text: r.content[0].text });
  } catch (e) {
    say({ step: 'again', ok: false, error: String(e) });
  }
}
process.exit(0);
