// Jukebox's Node.js preload (NODE_OPTIONS=--require), written per run with
// the run's proxy baked in. Node 20 ignores the proxy variables in fetch
// and in the http and https modules; this sends both through jukebox:
// every request to a host jukebox does not serve itself is rewritten to
// the proxy's path form, METHOD /_jbx/{scheme}/{host}/{path}, headers and
// body kept. The agent's code and its SDKs are not changed.
'use strict';
const CONFIG = /*JUKEBOX_CONFIG*/ { proxy: 'http://127.0.0.1:0', bypass: [] };
const http = require('http');
const https = require('https');
const proxy = new URL(CONFIG.proxy);
const bypass = new Set(CONFIG.bypass);
const agent = new http.Agent({ keepAlive: true });

function captured(scheme, host, port) {
  if (scheme !== 'http:' && scheme !== 'https:') return false;
  const h = host.startsWith('[') ? host : (host.includes(':') ? '[' + host + ']' : host);
  const dflt = scheme === 'https:' ? '443' : '80';
  const p = port ? String(port) : dflt;
  return !bypass.has(h + ':' + p);
}

function pathForm(scheme, host, port, path) {
  const dflt = scheme === 'https:' ? '443' : '80';
  const h = host.includes(':') && !host.startsWith('[') ? '[' + host + ']' : host;
  const authority = port && String(port) !== dflt ? h + ':' + port : h;
  return '/_jbx/' + scheme.slice(0, -1) + '/' + authority + (path || '/');
}

// unform is a URL of the proxy's path form as the agent asked for it:
// http://127.0.0.1:P/_jbx/https/host/path is https://host/path.
function unform(s) {
  const p = s.startsWith(proxy.origin + '/') ? s.slice(proxy.origin.length) : s;
  const m = /^\/_jbx\/(https?)\/([^/?#]+)(.*)$/.exec(p);
  return m ? m[1] + '://' + m[2] + (m[3] || '/') : s;
}

const LOCATION = 'x-jukebox-location'; // the Location the server sent, which jukebox rewrote

// asAsked is a fetch response as the agent's code would have had it
// without jukebox: its url the one asked for (or redirected to), a
// redirect's Location the server's; its clones alike.
function asAsked(res) {
  let out = res;
  const loc = res.headers.get(LOCATION);
  if (loc !== null) {
    const h = new Headers(res.headers);
    h.delete(LOCATION);
    h.set('location', loc);
    out = new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
  }
  return pin(out, unform(res.url), res.redirected, res.type);
}

// pin gives r, and every clone of it, the url, redirected and type given
// (a clone is built from the response's own state, which holds the
// proxy's URL, or none for a response rebuilt with its Location).
function pin(r, url, redirected, type) {
  Object.defineProperty(r, 'url', { value: url, configurable: true });
  Object.defineProperty(r, 'redirected', { value: redirected, configurable: true });
  Object.defineProperty(r, 'type', { value: type, configurable: true });
  const clone = r.clone;
  Object.defineProperty(r, 'clone', { value: function () { return pin(clone.call(this), url, redirected, type); }, configurable: true });
  return r;
}

if (typeof globalThis.fetch === 'function') {
  const origFetch = globalThis.fetch;
  globalThis.fetch = function fetch(input, init) {
    const isReq = typeof Request !== 'undefined' && input instanceof Request;
    let u;
    try { u = new URL(isReq ? input.url : String(input)); } catch { return origFetch(input, init); }
    if (!captured(u.protocol, u.hostname, u.port)) return origFetch(input, init);
    const target = proxy.origin + pathForm(u.protocol, u.hostname, u.port, u.pathname + u.search);
    if (isReq) return origFetch(new Request(target, input), init).then(asAsked);
    return origFetch(target, init).then(asAsked);
  };
}

// restoreLocation gives an http response the Location the server sent.
function restoreLocation(res) {
  const loc = res.headers[LOCATION];
  if (loc === undefined) return;
  res.headers.location = loc;
  delete res.headers[LOCATION];
  const raw = [];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const k = res.rawHeaders[i].toLowerCase();
    if (k === LOCATION) continue;
    raw.push(res.rawHeaders[i], k === 'location' ? loc : res.rawHeaders[i + 1]);
  }
  res.rawHeaders.splice(0, res.rawHeaders.length, ...raw);
}

// options reads the (url, options, callback) forms of http.request.
function options(mod, args) {
  let [a, b, c] = args;
  let opts = {};
  if (typeof a === 'string' || a instanceof URL) {
    const u = new URL(a);
    opts = { protocol: u.protocol, hostname: u.hostname, port: u.port, path: u.pathname + u.search };
    if (u.username || u.password) opts.auth = decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password);
    if (typeof b === 'function') { c = b; b = undefined; }
    if (b) opts = Object.assign(opts, b);
  } else {
    opts = Object.assign({}, a);
    c = b;
  }
  opts.protocol = opts.protocol || (mod === https ? 'https:' : 'http:');
  let host = opts.hostname || opts.host || 'localhost';
  if (!opts.hostname && host.includes(':') && !host.startsWith('[') && host.split(':').length === 2) host = host.split(':')[0];
  host = host.replace(/^\[|\]$/g, '');
  return { opts, host, cb: c };
}

function wrap(mod, orig) {
  return function request(...args) {
    const { opts, host, cb } = options(mod, args);
    if (opts.socketPath || !captured(opts.protocol, host, opts.port)) return orig.apply(mod, args);
    const out = Object.assign({}, opts, {
      protocol: 'http:', hostname: proxy.hostname, host: undefined, port: proxy.port,
      path: pathForm(opts.protocol, host, opts.port, opts.path), agent: opts.agent === false ? false : agent,
      createConnection: undefined, lookup: undefined,
    });
    const req = cb ? http.__jbxRequest(out, cb) : http.__jbxRequest(out);
    req.prependListener('response', restoreLocation);
    return req;
  };
}

http.__jbxRequest = http.request;
for (const mod of [http, https]) {
  const origRequest = mod.request;
  const request = wrap(mod, origRequest);
  mod.request = request;
  mod.get = function get(...args) { const req = request(...args); req.end(); return req; };
}
// ES modules that import { request } from 'node:http' see the new functions.
require('module').syncBuiltinESMExports();
