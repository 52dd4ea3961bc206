// The console's DOM helpers: elements built with their attributes and children (every
// text set as a text node, never as markup, its hidden characters shown), tables with a caption for screen readers,
// term lists, the marks of an expiry, and instants (UTC, the browser's own time on hover).
import { instantsIn, onHover, utcInstant, visible, type Expiry } from './console-format.js'

/** The page's element of that id; a missing one is the page's fault, said at once. */
export const $ = <T extends HTMLElement>(id: string): T => {
  const node = document.getElementById(id)
  if (!node) throw new Error(`the page has no #${id}`)
  return node as T
}

/** What an element may hold: an element, a text, or nothing. */
export type Child = Node | string | null

/** An element with its attributes and children, each text `visible`. */
export function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value)
  for (const child of children) if (child !== null) node.append(typeof child === 'string' ? visible(child) : child)
  return node
}

/**
 * Makes the children of the page's `#id` those given, freshly built, changing only what
 * differs: a node equal to its fresh copy stays, and with it the focus, a selection or a
 * scroll inside it; an element of the same tag and attributes is kept and its children
 * made so in turn; any other node is replaced. A refresh that brings the same data
 * changes nothing on the page.
 */
export function redraw(id: string, ...fresh: Node[]): void {
  patch($(id), fresh)
}

function patch(parent: Node, fresh: readonly Node[]): void {
  const current = [...parent.childNodes]
  fresh.forEach((next, i) => {
    const old = current[i]
    if (old === undefined) parent.appendChild(next)
    else if (old.isEqualNode(next)) return
    else if (sameShell(old, next)) patch(old, [...next.childNodes])
    else parent.replaceChild(next, old)
  })
  for (const extra of current.slice(fresh.length)) extra.remove()
}

/** Two elements of one tag with the same attributes and values. */
function sameShell(a: Node, b: Node): boolean {
  if (!(a instanceof Element && b instanceof Element) || a.tagName !== b.tagName) return false
  const names = a.getAttributeNames()
  return names.length === b.getAttributeNames().length && names.every((name) => a.getAttribute(name) === b.getAttribute(name))
}

/** An expiry as a coloured mark: soon, expired, or none. */
export function mark(expiry: Expiry): HTMLElement {
  return el('span', { class: `mark ${expiry.level}` }, expiry.text)
}

/** A table in a scrolling region of its own, with a caption for screen readers. */
export function table(caption: string, heads: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': caption, tabindex: '0' },
    el('table', {}, el('caption', { class: 'sr-only' }, caption), el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, ...rows)),
  )
}

/** Terms and their values, as a description list. */
export function facts(pairs: [string, Child][]): HTMLElement {
  const list = el('dl')
  for (const [term, value] of pairs) list.append(el('div', {}, el('dt', {}, term), el('dd', {}, value)))
  return list
}

/**
 * An instant as the page shows it, in UTC with its date (`2026-11-24 00:12:05 UTC`, or
 * `text` when given, a date alone say); hovering it gives the browser's own time.
 */
export function when(at: string | number, precision: 'seconds' | 'minutes' = 'seconds', text?: string): HTMLElement {
  const iso = new Date(typeof at === 'number' ? at : Date.parse(at)).toISOString()
  return el('time', { datetime: iso, title: onHover(iso) }, text ?? utcInstant(iso, precision))
}

/** A text whose instants (`2026-11-24 00:12:05 UTC`) are each an instant of `when`, for the hover. */
export function withInstants(text: string): (Node | string)[] {
  return instantsIn(text).map((part) => (part.at === null ? part.text : when(part.at, 'seconds', part.text)))
}
