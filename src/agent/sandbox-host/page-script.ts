/**
 * What the process host evaluates in the page before each call (defined once per document): the
 * page as an accessibility tree in text, the form the model reads best, with a reference on every
 * element it can act on. A reference is kept per element for the life of the document, so the refs
 * of one snapshot stay valid in the next. Each call answers a value, or `{refused}` with why.
 */
export const PAGE_SCRIPT = String.raw`
if (!window.__pb) window.__pb = (() => {
  const refs = new WeakMap();
  const byRef = new Map();
  let next = 0;
  const ROLES = { A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', IMG: 'img', UL: 'list',
    OL: 'list', LI: 'listitem', NAV: 'navigation', MAIN: 'main', FORM: 'form', TABLE: 'table', TR: 'row', TD: 'cell',
    TH: 'columnheader', DIALOG: 'dialog', H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading',
    H6: 'heading', P: 'paragraph', HEADER: 'banner', FOOTER: 'contentinfo', OUTPUT: 'status' };
  const INPUTS = { checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button',
    image: 'button', range: 'slider', file: 'button', search: 'searchbox', number: 'spinbutton' };
  const ACTIONABLE = new Set(['link', 'button', 'textbox', 'searchbox', 'spinbutton', 'checkbox', 'radio',
    'combobox', 'slider', 'switch', 'tab', 'menuitem', 'option']);
  const LEAVES = new Set([...ACTIONABLE, 'heading', 'img']);
  const SKIPPED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD']);
  const clean = (text) => (text || '').replace(/\s+/g, ' ').trim();
  const refOf = (el) => {
    let ref = refs.get(el);
    if (!ref) {
      ref = 'e' + ++next;
      refs.set(el, ref);
      byRef.set(ref, new WeakRef(el));
    }
    return ref;
  };
  const hidden = (el) => {
    if (el.hidden || el.getAttribute('aria-hidden') === 'true') return true;
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden';
  };
  const roleOf = (el) => {
    const given = el.getAttribute('role');
    if (given) return given;
    if (el.tagName === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      return type === 'hidden' ? null : (INPUTS[type] || 'textbox');
    }
    if (el.tagName === 'A' && !el.hasAttribute('href')) return null;
    return ROLES[el.tagName] || null;
  };
  // A label's text without the control it wraps (a select's options are not its name).
  const textBesides = (node, skip) =>
    node === skip ? '' : node.nodeType === 3 ? node.textContent : [...node.childNodes].map((c) => textBesides(c, skip)).join(' ');
  const nameOf = (el) => {
    const label = el.getAttribute('aria-label');
    if (label) return clean(label);
    const by = el.getAttribute('aria-labelledby');
    if (by) return clean(by.split(/\s+/).map((id) => document.getElementById(id)?.textContent).join(' '));
    if (el.labels && el.labels.length) return clean([...el.labels].map((l) => textBesides(l, el)).join(' '));
    if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return clean(el.value);
    if (el.tagName === 'IMG') return clean(el.alt);
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName)) return clean(el.placeholder || el.title);
    return clean(el.innerText ?? el.textContent).slice(0, 200);
  };
  const describe = (el, role) => {
    let text = role;
    const name = nameOf(el);
    if (name && role !== 'paragraph') text += ' ' + JSON.stringify(name);
    if (role === 'heading') text += ' [level=' + (el.getAttribute('aria-level') || el.tagName[1] || 2) + ']';
    if (el.disabled) text += ' [disabled]';
    if (el.checked) text += ' [checked]';
    if (ACTIONABLE.has(role)) text += ' [ref=' + refOf(el) + ']';
    if (el.tagName === 'SELECT')
      text += ': ' + [...el.selectedOptions].map((o) => o.label).join(', ') +
        ' (options: ' + [...el.options].map((o) => JSON.stringify(o.label)).join(', ') + ')';
    else if (['textbox', 'searchbox', 'spinbutton'].includes(role) && el.value)
      text += ': ' + (el.type === 'password' ? '*'.repeat(el.value.length) : el.value);
    return text;
  };
  const walk = (node, depth, out) => {
    for (const child of node.childNodes) {
      if (out.length >= 1500) return;
      if (child.nodeType === 3) {
        const text = clean(child.textContent);
        if (text) out.push('  '.repeat(depth) + '- text: ' + text);
        continue;
      }
      if (child.nodeType !== 1 || SKIPPED.has(child.tagName) || hidden(child)) continue;
      const role = roleOf(child);
      if (!role) {
        walk(child.shadowRoot || child, depth, out);
        continue;
      }
      out.push('  '.repeat(depth) + '- ' + describe(child, role));
      if (!LEAVES.has(role)) walk(child, depth + 1, out);
    }
  };
  const find = (ref) => {
    const el = byRef.get(ref)?.deref();
    return el && el.isConnected ? el : null;
  };
  const gone = (ref) => ({ refused: 'There is no element ' + ref + ' on this page (any more): take a new browser_snapshot.' });
  return {
    where: () => ({ url: location.href, title: document.title }),
    snapshot() {
      const out = [];
      if (document.body) walk(document.body, 0, out);
      if (out.length >= 1500) out.push('- (the page goes on: the snapshot stops here)');
      return { url: location.href, title: document.title, snapshot: out.join('\n') };
    },
    point(ref) {
      const el = find(ref);
      if (!el) return gone(ref);
      if (el.disabled) return { refused: ref + ' is disabled' };
      el.scrollIntoView({ block: 'center', inline: 'center' });
      const box = el.getBoundingClientRect();
      return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
    },
    focus(ref) {
      const el = find(ref);
      if (!el) return gone(ref);
      el.focus();
      if (typeof el.select === 'function') el.select();
      else if (el.isContentEditable) document.execCommand('selectAll');
      return document.activeElement === el ? true : { refused: ref + ' cannot take typing' };
    },
    select(ref, values) {
      const el = find(ref);
      if (!el) return gone(ref);
      if (el.tagName !== 'SELECT') return { refused: ref + ' is not a select element' };
      const chosen = [...el.options].filter((o) => values.includes(o.value) || values.includes(o.label));
      if (chosen.length === 0)
        return { refused: 'No option of ' + ref + ' is ' + values.join(', ') + ': its options are ' +
          [...el.options].map((o) => o.label).join(', ') };
      for (const option of el.options) option.selected = chosen.includes(option);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      return true;
    },
    has(text, selector) {
      if (text) return (document.body?.innerText || '').includes(text);
      try {
        return selector ? document.querySelector(selector) !== null : false;
      } catch {
        return { refused: JSON.stringify(selector) + ' is not a CSS selector' };
      }
    },
  };
})();
`;
