// SPDX-License-Identifier: Apache-2.0
// Building the DOM without innerHTML: text from the server (ids, errors,
// payloads) is always a text node, never markup.

// h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child, [more])
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.setAttribute('class', value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// Replaces the children of `el`.
export function replace(el, ...children) {
  el.replaceChildren();
  return fill(el, {}, children);
}

// A table: `columns` are [heading, cell(row) => node|string]; rows may be empty.
export function table(caption, columns, rows, empty = 'Nothing here.') {
  if (!rows.length) return h('p', { class: 'muted empty' }, empty);
  return h('div', { class: 'table-wrap' },
    h('table', {},
      h('caption', { class: caption ? '' : 'sr-only' }, caption || 'Table'),
      h('thead', {}, h('tr', {}, columns.map(([name]) => h('th', { scope: 'col' }, name)))),
      h('tbody', {}, rows.map((row) => h('tr', {}, columns.map(([, cell]) => h('td', {}, cell(row))))))));
}
