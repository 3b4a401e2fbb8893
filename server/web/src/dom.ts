// A tiny element builder: the pages are small enough that a framework would be more code.

type Child = Node | string | null | undefined | false;

export function h(
  tag: string,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** Replace ``parent``'s children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(
    ...children.filter((child): child is Node | string => child !== null && child !== undefined && child !== false),
  );
}

const NEXT_KEYS = new Set(["ArrowRight", "ArrowDown"]);
const PREVIOUS_KEYS = new Set(["ArrowLeft", "ArrowUp"]);

/** Make ``group``'s enabled buttons one Tab stop, as a toolbar is (WAI-ARIA's roving tabindex):
 * the arrow keys move between them (Home and End to the ends), Enter or Space presses one.
 * ``current`` (else the first enabled button) is the one Tab reaches. */
export function rovingGroup(group: HTMLElement, current?: HTMLElement | null): void {
  const enabled = (): HTMLButtonElement[] =>
    Array.from(group.querySelectorAll<HTMLButtonElement>("button")).filter((button) => !button.disabled);
  const stop = (chosen: HTMLElement | undefined): void => {
    for (const button of group.querySelectorAll<HTMLButtonElement>("button")) button.tabIndex = button === chosen ? 0 : -1;
  };
  const buttons = enabled();
  stop(current && buttons.includes(current as HTMLButtonElement) ? current : buttons[0]);
  group.addEventListener("keydown", (event) => {
    const all = enabled();
    const at = all.indexOf(document.activeElement as HTMLButtonElement);
    let next: number | undefined;
    if (NEXT_KEYS.has(event.key)) next = at < 0 ? 0 : Math.min(all.length - 1, at + 1);
    else if (PREVIOUS_KEYS.has(event.key)) next = at < 0 ? 0 : Math.max(0, at - 1);
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = all.length - 1;
    const target = next === undefined ? undefined : all[next];
    if (!target) return;
    event.preventDefault();
    stop(target);
    target.focus();
  });
  group.addEventListener("focusin", (event) => {
    if (event.target instanceof HTMLButtonElement && !event.target.disabled) stop(event.target);
  });
}

/** Where the focus is inside ``view``, as a selector that finds the same control once the page
 * is drawn again (an element marked ``data-focus``, or a link by its address), so a page that
 * redraws itself can put the focus back: a keyboard user keeps their place. */
export function focusedKey(view: HTMLElement): string | undefined {
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || !view.contains(active)) return undefined;
  const marked = active.closest<HTMLElement>("[data-focus]")?.dataset.focus;
  if (marked) return `[data-focus="${CSS.escape(marked)}"]`;
  const href = active instanceof HTMLAnchorElement ? active.getAttribute("href") : null;
  return href ? `a[href="${CSS.escape(href)}"]` : undefined;
}

/** Focus the first element one of ``selectors`` finds that can take it (an enabled one); true
 * if one did. */
export function focusFirst(view: HTMLElement, selectors: string[]): boolean {
  for (const selector of selectors) {
    const element = view.querySelector<HTMLElement>(selector);
    if (!element || (element instanceof HTMLButtonElement && element.disabled)) continue;
    element.focus({ preventScroll: true });
    if (document.activeElement === element) return true;
  }
  return false;
}
