// A finished rated table's rating changes on its page: each account's "Rating 3.1 → 4.6 (+1.5)",
// read from its ratings once the pool has rated the match (a moment after the match ends: asked
// again every half second for a while). Drawn once per table, however often the page redraws.

import { type Seat, type SeatStatus, type SpadesClients, changeOf, connectTo, ratingChangeText } from "@spades/client";
import { h, replace } from "./dom.js";
import { playerHref } from "./ratings.js";

const TRIES = 40;
const EVERY_MS = 500;

let clients: SpadesClients | undefined;
const shown = new Map<string, HTMLElement>();

async function fill(element: HTMLElement, tableId: string, seats: SeatStatus[]): Promise<void> {
  clients ??= connectTo(window.location.origin);
  const accounts = new Map<string, string>();
  for (const seat of seats) if (seat.accountId) accounts.set(seat.accountId, seat.playerName);
  const lines = new Map<string, HTMLElement>();
  for (let tries = 0; tries < TRIES && lines.size < accounts.size; tries += 1) {
    for (const [accountId, name] of accounts) {
      if (lines.has(accountId)) continue;
      try {
        const page = await clients.rating.getRatings({ accountId, pageSize: 10 });
        const match = page.history.find((rated) => rated.tableId === tableId);
        const change = match ? changeOf(match, accountId) : undefined;
        if (change) {
          lines.set(accountId, h("li", { "data-account-id": accountId },
            h("a", { href: playerHref(accountId), class: "player" }, name), `: ${ratingChangeText(change)}`));
        }
      } catch {
        // Asked again on the next round.
      }
    }
    replace(element, ...(lines.size ? [h("ul", {}, ...lines.values())] : [h("p", {}, "Rating the match…")]));
    if (lines.size < accounts.size) await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
  }
}

/** The rating changes of the finished rated table ``tableId`` (its seats as the lobby lists them). */
export function ratingChanges(tableId: string, seats: Map<Seat, SeatStatus>): HTMLElement {
  let element = shown.get(tableId);
  if (!element) {
    element = h("section", { class: "rating-changes", "aria-label": "Rating changes" }, h("p", {}, "Rating the match…"));
    shown.set(tableId, element);
    void fill(element, tableId, [...seats.values()]);
  }
  return element;
}
