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
