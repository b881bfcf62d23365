// SPDX-License-Identifier: Apache-2.0
// Modal dialogs (<dialog>: focus kept inside, Esc cancels) and toasts.
import { h } from './dom.js';

let counter = 0;

// Asks before an action; resolves true if confirmed.
export function confirmAction({ title, message, confirm = 'Confirm', danger = false }) {
  return new Promise((resolve) => {
    const id = `dialog-${++counter}`;
    const ok = h('button', { type: 'button', class: danger ? 'danger' : 'primary' }, confirm);
    const cancel = h('button', { type: 'button', class: 'ghost' }, 'Cancel');
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': id },
      h('h2', { id }, title),
      h('div', { class: 'dialog-body' }, message),
      h('div', { class: 'actions' }, cancel, ok));
    ok.addEventListener('click', () => dlg.close('ok'));
    cancel.addEventListener('click', () => dlg.close('cancel'));
    dlg.addEventListener('close', () => { resolve(dlg.returnValue === 'ok'); dlg.remove(); });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// A form in a dialog. `onSubmit(form)` may throw: its message is shown and
// the dialog stays open; when it resolves, the dialog closes.
export function formDialog({ title, fields, submit = 'Save', danger = false, onSubmit }) {
  const id = `dialog-${++counter}`;
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const cancel = h('button', { type: 'button', class: 'ghost' }, 'Cancel');
  const button = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, submit);
  const form = h('form', { class: 'dialog-form', novalidate: true },
    h('h2', { id }, title), fields, error, h('div', { class: 'actions' }, cancel, button));
  const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': id }, form);
  cancel.addEventListener('click', () => dlg.close());
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    button.disabled = true;
    error.hidden = true;
    try {
      await onSubmit(form);
      dlg.close('ok');
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  const first = form.querySelector('input, textarea, select');
  if (first) first.focus();
  return dlg;
}

// A short message at the top right; errors stay until dismissed.
export function toast(message, kind = 'info') {
  const box = document.getElementById('toasts');
  const close = h('button', { type: 'button', class: 'ghost small', 'aria-label': 'Dismiss' }, '×');
  const item = h('div', { class: `toast toast-${kind}` }, h('span', {}, message), close);
  close.addEventListener('click', () => item.remove());
  box.append(item);
  if (kind !== 'error') setTimeout(() => item.remove(), 6000);
}

// A labelled input.
export function field(label, input, hint) {
  const id = input.id || `field-${++counter}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input,
    hint ? h('small', { class: 'muted' }, hint) : null);
}
