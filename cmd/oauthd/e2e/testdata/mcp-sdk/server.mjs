// An MCP server made with the official SDK (stateless Streamable HTTP),
// for oauthd's MCP end-to-end test (cmd/oauthd/e2e/mcp_test.go). It sits
// behind `oauthd gateway`, which checks the tokens and passes the user in
// X-Oauthd-User-Id. It prints {"port": N} once listening.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const srv = http.createServer(async (req, res) => {
  if (!req.url.startsWith('/v2/mcp')) {
    res.writeHead(404).end();
    return;
  }
  const user = req.headers['x-oauthd-user-id'] || '';
  const scopes = req.headers['x-oauthd-scopes'] || '';
  const server = new McpServer({ name: 'oauthd-e2e-mcp', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who the token acts for' }, async () => ({
    content: [{ type: 'text', text: JSON.stringify({ user, scopes }) }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    let body = '';
    for await (const chunk of req) body += chunk;
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  } catch (e) {
    console.error('server error', e);
    if (!res.headersSent) res.writeHead(500).end();
  }
});
srv.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: srv.address().port })));
