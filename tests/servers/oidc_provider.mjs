// A real authorization server nobody here wrote: oidc-provider (npm), configured as the MCP
// authorization spec asks of one, for tests.
//
//   node oidc_provider.mjs --module <node_modules>/oidc-provider --port P --secret S --record tokens.jsonl [--fd N]
//
// (--fd: an inherited socket bound to port P, to listen on: the tests reserve the port that way)
//
// - Dynamic Client Registration (open), PKCE required with S256 (the only method it has),
//   resource indicators (RFC 8707: every access token is opaque, for one resource, whose URL is
//   its audience), refresh tokens for offline_access, rotated at every use (a reused one is
//   refused and revokes its grant), revocation, introspection (for the resource server, the
//   static confidential client "resource-server" with --secret), client credentials (a token
//   for any resource, as the tests' own client), the device authorization grant (RFC 8628);
// - devInteractions: its own login and consent pages (any login and password);
// - every token endpoint request is one JSON line in --record: grant_type, the refresh token
//   presented, resource, HTTP status, OAuth error (the tests count refreshes there);
// - POST /test/ttl (body: seconds) sets the access token lifetime of tokens issued from then on;
// - the device authorization answer says `interval` (--interval, 1 s: oidc-provider says none,
//   so 5 s), and a poll sooner than that after the previous one is answered slow_down, as
//   RFC 8628 lets a server do (oidc-provider itself never does).

import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: options } = parseArgs({
  options: {
    module: { type: 'string' },
    port: { type: 'string' },
    fd: { type: 'string' },
    secret: { type: 'string' },
    record: { type: 'string' },
    ttl: { type: 'string', default: '3600' },
    interval: { type: 'string', default: '1' },
  },
});

const { default: Provider, errors } = await import(pathToFileURL(join(options.module, 'lib', 'index.js')).href);

let accessTokenTTL = Number(options.ttl);
const interval = Number(options.interval);
const lastPoll = new Map();
const issuer = `http://127.0.0.1:${options.port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'resource-server',
    client_secret: options.secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  }],
  scopes: ['openid', 'offline_access', 'mcp'], // mcp: the SDK registers with the scope it will ask for
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (!resource.startsWith('http://127.0.0.1:')) throw new errors.InvalidTarget();
        return { scope: 'mcp', audience: resource, accessTokenTTL, accessTokenFormat: 'opaque' };
      },
    },
  },
  pkce: { required: () => true },
  rotateRefreshToken: true,
  cookies: { keys: ['projector-test-cookie-key'] },
  ttl: {
    AccessToken: () => accessTokenTTL,
    ClientCredentials: () => accessTokenTTL,
    AuthorizationCode: 60,
    DeviceCode: 120,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 86400,
    Session: 3600,
  },
});

provider.use(async (ctx, next) => {
  if (ctx.path === '/test/ttl' && ctx.method === 'POST') {
    let body = '';
    for await (const chunk of ctx.req) body += chunk;
    accessTokenTTL = Number(body);
    ctx.body = { ttl: accessTokenTTL };
    return;
  }
  await next();
  if (ctx.path === '/device/auth' && ctx.method === 'POST' && ctx.status === 200) {
    ctx.body = { ...ctx.body, interval };
  }
  if (ctx.path === '/token' && ctx.method === 'POST') {
    const params = ctx.oidc?.params ?? {};
    let body = typeof ctx.body === 'object' && ctx.body !== null ? ctx.body : {};
    if (params.grant_type === 'urn:ietf:params:oauth:grant-type:device_code') {
      const now = Date.now() / 1000;
      const last = lastPoll.get(params.device_code);
      lastPoll.set(params.device_code, now);
      if (body.error === 'authorization_pending' && last !== undefined && now - last < interval) {
        body = { error: 'slow_down', error_description: 'polled sooner than the interval' };
        ctx.body = body;
      }
    }
    appendFileSync(options.record, `${JSON.stringify({
      grant_type: params.grant_type,
      refresh_token: params.refresh_token,
      device_code: params.device_code,
      resource: params.resource,
      status: ctx.status,
      error: body.error,
      at: Date.now() / 1000,
    })}\n`);
  }
});

const where = options.fd !== undefined ? [{ fd: Number(options.fd) }] : [Number(options.port), '127.0.0.1'];
provider.listen(...where, () => {
  process.stdout.write(`listening ${issuer}\n`);
});
