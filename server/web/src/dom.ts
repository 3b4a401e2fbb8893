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
