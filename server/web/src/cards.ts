// Cards drawn as cards: each face an SVG made here (no image to fetch), the suits in colour
// (hearts and diamonds red, spades and clubs black, the jokers purple and teal), pips laid out
// as a printed deck lays them. Each card also has a
// name a screen reader says ("Queen of hearts"): the drawing itself is hidden from it.

import { type Card, Rank, Suit, cardName, isRed, rankLabel } from "@spades/client";

const SVG = "http://www.w3.org/2000/svg";

/** The card's box: 5 by 7, as a poker card. */
const WIDTH = 60;
const HEIGHT = 84;

/** A card's name as the text of the element holding its face, seen only by a screen reader:
 * the button's name is then "Queen of hearts" (an ``aria-label`` would not contain the letters
 * drawn in its corners, which axe-core reports as a label unlike its visible text). */
export function cardNameText(card: Card): HTMLElement {
  const name = document.createElement("span");
  name.className = "card-name visually-hidden";
  name.textContent = cardName(card);
  return name;
}

/** The colour family a card is drawn in (a class of style.css: ``suit-red`` ...). */
export function cardColour(card: Card): "red" | "black" | "big-joker" | "little-joker" {
  if (card.rank === Rank.BIG_JOKER) return "big-joker";
  if (card.rank === Rank.LITTLE_JOKER) return "little-joker";
  return isRed(card) ? "red" : "black";
}

// Each suit's outline in a 100 by 100 box (drawn here, so no font needs the symbols).
const SUIT_PATHS: Record<number, string> = {
  [Suit.HEARTS]:
    "M50 92C22 68 2 50 2 29 2 13 14 2 28 2 39 2 46 9 50 17 54 9 61 2 72 2 86 2 98 13 98 29 98 50 78 68 50 92Z",
  [Suit.DIAMONDS]: "M50 2 86 50 50 98 14 50Z",
  [Suit.SPADES]:
    "M50 2C78 26 98 42 98 60 98 75 87 84 74 84 64 84 57 79 53 72 54 84 58 92 66 98H34C42 92 46 84 47 72 43 79 36 84 26 84 13 84 2 75 2 60 2 42 22 26 50 2Z",
  [Suit.CLUBS]:
    "M50 4A22 22 0 1 1 49.9 4ZM26 38A22 22 0 1 1 25.9 38ZM74 38A22 22 0 1 1 73.9 38ZM46 56C46 78 42 90 32 98H68C58 90 54 78 54 56Z",
};

// Where the pips of a number card sit, as fractions of the pip field (x across, y down); a pip
// in the lower half is drawn upside down, as on a printed card.
const PIPS: Record<number, [number, number][]> = {
  [Rank.ACE]: [[0.5, 0.5]],
  [Rank.TWO]: [[0.5, 0], [0.5, 1]],
  [Rank.THREE]: [[0.5, 0], [0.5, 0.5], [0.5, 1]],
  [Rank.FOUR]: [[0, 0], [1, 0], [0, 1], [1, 1]],
  [Rank.FIVE]: [[0, 0], [1, 0], [0.5, 0.5], [0, 1], [1, 1]],
  [Rank.SIX]: [[0, 0], [1, 0], [0, 0.5], [1, 0.5], [0, 1], [1, 1]],
  [Rank.SEVEN]: [[0, 0], [1, 0], [0.5, 0.25], [0, 0.5], [1, 0.5], [0, 1], [1, 1]],
  [Rank.EIGHT]: [[0, 0], [1, 0], [0.5, 0.25], [0, 0.5], [1, 0.5], [0.5, 0.75], [0, 1], [1, 1]],
  [Rank.NINE]: [[0, 0], [1, 0], [0, 1 / 3], [1, 1 / 3], [0.5, 0.5], [0, 2 / 3], [1, 2 / 3], [0, 1], [1, 1]],
  [Rank.TEN]: [[0, 0], [1, 0], [0.5, 1 / 6], [0, 1 / 3], [1, 1 / 3], [0, 2 / 3], [1, 2 / 3], [0.5, 5 / 6], [0, 1], [1, 1]],
};

function svg(tag: string, attributes: Record<string, string | number>, ...children: SVGElement[]): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

function text(content: string, attributes: Record<string, string | number>): SVGElement {
  const element = svg("text", attributes);
  element.textContent = content;
  return element;
}

/** A suit's outline, ``size`` wide, centred on (x, y); upside down when ``flipped``. */
function pip(suit: Suit, x: number, y: number, size: number, flipped = false): SVGElement {
  const scale = size / 100;
  const turn = flipped ? ` rotate(180 50 50)` : "";
  return svg("path", {
    d: SUIT_PATHS[suit] ?? "",
    transform: `translate(${x - size / 2} ${y - size / 2}) scale(${scale})${turn}`,
    class: "pip",
  });
}

/** The rank and suit in one corner (the other corner is the same, turned round). */
function corner(index: string, suit: Suit): SVGElement {
  const group = svg("g", { class: "index" },
    text(index, { x: 8, y: 14, "text-anchor": "middle", "font-size": index.length > 1 ? 11 : 13, "font-weight": 700 }),
    pip(suit, 8, 22, 8),
  );
  return group;
}

function face(card: Card): SVGElement[] {
  const suit = card.suit;
  const index = rankLabel(card.rank);
  const corners = [corner(index, suit), svg("g", { transform: `rotate(180 ${WIDTH / 2} ${HEIGHT / 2})` }, corner(index, suit))];
  const pips = PIPS[card.rank];
  if (pips) {
    // The pip field, inside the corners' columns.
    const [left, top, width, height] = [19, 16, 22, 52];
    const size = card.rank === Rank.ACE ? 30 : 13;
    return [
      ...corners,
      ...pips.map(([x, y]) => pip(suit, left + x * width, top + y * height, size, y > 0.5)),
    ];
  }
  // A court card: a framed panel with the rank's letter and the suit.
  return [
    ...corners,
    svg("rect", { x: 16, y: 12, width: 28, height: 60, rx: 3, class: "court" }),
    text(index, { x: 30, y: 42, "text-anchor": "middle", "font-size": 22, "font-weight": 700, "font-family": "Georgia, serif" }),
    pip(suit, 30, 56, 14),
  ];
}

function joker(card: Card): SVGElement[] {
  const big = card.rank === Rank.BIG_JOKER;
  const star = "M50 4 61 38 97 38 68 59 79 94 50 73 21 94 32 59 3 38 39 38Z";
  const stars = (x: number, y: number, size: number): SVGElement =>
    svg("path", { d: star, transform: `translate(${x - size / 2} ${y - size / 2}) scale(${size / 100})`, class: "pip" });
  return [
    text(big ? "BIG" : "LITTLE", { x: 30, y: 16, "text-anchor": "middle", "font-size": big ? 10 : 8, "font-weight": 700 }),
    stars(30, 42, big ? 34 : 24),
    text("JOKER", { x: 30, y: 74, "text-anchor": "middle", "font-size": 10, "font-weight": 700, "letter-spacing": 1 }),
  ];
}

/** A card's face as an SVG (hidden from screen readers: the element holding it names it). */
export function cardFace(card: Card): SVGElement {
  const jokers = card.rank === Rank.LITTLE_JOKER || card.rank === Rank.BIG_JOKER;
  return svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: `card-face suit-${cardColour(card)}`,
    "aria-hidden": "true",
    focusable: "false",
  },
  svg("rect", { x: 0.75, y: 0.75, width: WIDTH - 1.5, height: HEIGHT - 1.5, rx: 5, class: "paper" }),
  ...(jokers ? joker(card) : face(card)));
}
