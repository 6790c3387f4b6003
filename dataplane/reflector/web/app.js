// The feedplane page: the JSON API of the reflector, driven from the browser. The account
// secret lives in localStorage and travels only in the Authorization header, never in a
// URL. Served with a Content-Security-Policy that allows this script and nothing inline.
'use strict';

const $ = (id) => document.getElementById(id);
const secretKey = 'feedplane-secret';

function secret() { return localStorage.getItem(secretKey) || ''; }

async function api(method, path, body) {
  const headers = {};
  if (secret()) headers.Authorization = 'Bearer ' + secret();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: 'bad_answer', message: text }; }
  if (!r.ok) {
    const err = new Error(data && data.message ? data.message : r.status + ' ' + r.statusText);
    err.data = data;
    throw err;
  }
  return data;
}

function show(el, text) { el.textContent = text; el.hidden = !text; }

function describe(err) {
  const d = err.data || {};
  let m = err.message;
  if (d.error === 'invalid_query' && d.column) m += ' (at column ' + d.column + ')';
  return m;
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) e.append(c);
  return e;
}

// An item of a JSON Feed or a preview: content_html is sanitized by the server.
function item(i) {
  const li = el('li');
  const a = el('a', { href: i.url || '#', textContent: i.title || '(no title)', rel: 'noopener noreferrer' });
  li.append(a);
  const source = (i._feedplane && i._feedplane.source) || i.source || '';
  li.append(el('div', { className: 'meta', textContent: (i.date_published || '') + (source ? ' · ' + source : '') }));
  const body = el('div');
  body.innerHTML = i.content_html || '';
  li.append(body);
  return li;
}

function feedLinks(s) {
  const div = el('div', { className: 'feeds' });
  for (const [name, path] of Object.entries(s.feeds)) {
    const url = location.origin + path;
    div.append(el('a', { href: path, textContent: name.toUpperCase() }));
    const b = el('button', { type: 'button', textContent: 'copy', className: 'copy' });
    b.dataset.url = url;
    b.addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText(url));
    div.append(b, ' ');
  }
  return div;
}

function subscriptionView(s) {
  const li = el('li', { className: 'sub' });
  li.dataset.id = s.id;
  li.append(el('strong', { textContent: s.title || s.query }));
  li.append(el('div', { className: 'meta', textContent: 'query ' + s.query + ' · keeps ' + s.k + ' · ' + s.entries + ' entries' }));
  li.append(feedLinks(s));
  const error = el('p', { className: 'error', hidden: true });
  const items = el('ol', { className: 'items' });
  const actions = el('div', { className: 'actions' });
  const latest = el('button', { type: 'button', textContent: 'Latest matches', className: 'latest' });
  latest.addEventListener('click', async () => {
    try {
      const r = await fetch(s.feeds.json);
      const feed = await r.json();
      items.replaceChildren(...feed.items.map(item));
      if (!feed.items.length) items.replaceChildren(el('li', { textContent: 'No matches yet.' }));
    } catch (e) { show(error, describe(e)); }
  });
  const edit = el('button', { type: 'button', textContent: 'Edit' });
  edit.addEventListener('click', () => {
    const form = el('form', { className: 'edit' });
    const q = el('input', { value: s.query, size: 40, required: true });
    const k = el('input', { type: 'number', min: 1, max: 100, value: s.k });
    const t = el('input', { value: s.title, size: 24 });
    form.append(el('label', {}, 'Query ', q), el('label', {}, 'Entries ', k), el('label', {}, 'Title ', t), el('button', { type: 'submit', textContent: 'Save' }));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await api('PATCH', '/api/subscriptions/' + encodeURIComponent(s.id), { query: q.value, k: Number(k.value), title: t.value });
        await refresh();
      } catch (e) { show(error, describe(e)); }
    });
    li.append(form);
  });
  const del = el('button', { type: 'button', textContent: 'Delete' });
  del.addEventListener('click', async () => {
    if (!confirm('Delete this subscription and its feed?')) return;
    try { await api('DELETE', '/api/subscriptions/' + encodeURIComponent(s.id)); await refresh(); } catch (e) { show(error, describe(e)); }
  });
  actions.append(latest, edit, del);
  li.append(actions, error, items);
  return li;
}

async function refresh() {
  const signedIn = !!secret();
  $('signed-out').hidden = signedIn;
  $('signed-in').hidden = !signedIn;
  $('subscribe').hidden = !signedIn;
  $('subscriptions').hidden = !signedIn;
  if (!signedIn) return;
  $('account-id').textContent = secret().split('.')[0];
  try {
    const r = await api('GET', '/api/subscriptions');
    $('subscription-list').replaceChildren(...r.subscriptions.map(subscriptionView));
    $('none').hidden = r.subscriptions.length > 0;
    show($('account-error'), '');
  } catch (e) { show($('account-error'), describe(e)); }
}

function spec() {
  const body = { query: $('query').value, k: Number($('k').value) || 10 };
  if ($('title').value) body.title = $('title').value;
  return body;
}

document.addEventListener('DOMContentLoaded', () => {
  $('create-account').addEventListener('click', async () => {
    try {
      const a = await api('POST', '/api/accounts');
      localStorage.setItem(secretKey, a.secret);
      $('secret-text').textContent = a.secret;
      $('new-secret').hidden = false;
      await refresh();
    } catch (e) { show($('account-error'), describe(e)); }
  });
  $('use-secret').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    localStorage.setItem(secretKey, $('secret-input').value.trim());
    $('secret-input').value = '';
    await refresh();
  });
  $('sign-out').addEventListener('click', async () => {
    localStorage.removeItem(secretKey);
    $('new-secret').hidden = true;
    await refresh();
  });
  $('add-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('POST', '/api/subscriptions', spec());
      show($('add-error'), '');
      $('query').value = '';
      $('preview').hidden = true;
      await refresh();
    } catch (e) { show($('add-error'), describe(e)); }
  });
  $('preview-button').addEventListener('click', async () => {
    try {
      const r = await api('POST', '/api/preview', { query: $('query').value, k: Number($('k').value) || 10 });
      show($('add-error'), '');
      $('preview-items').replaceChildren(...r.items.map(item));
      if (!r.items.length) $('preview-items').replaceChildren(el('li', { textContent: 'Nothing among the recent articles.' }));
      $('preview').hidden = false;
    } catch (e) { show($('add-error'), describe(e)); }
  });
  refresh();
});
