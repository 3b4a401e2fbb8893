// A table, watched live: seats and names, bids, the trick being played, tricks won, the score
// table after each hand (bids, tricks, points, bags, what each side still needs), and how the
// match ended. Everything comes from the public Watch stream: a spectator is never sent a card
// that is still in someone's hand, so none can appear here.

import {
  type HandScored,
  MatchEndReason,
  type PlayedCard,
  Seat,
  type SideResult,
  type SpadesClients,
  type TableState,
  bidLabel,
  cardKey,
  cardLabel,
  fold,
  fromSnapshot,
  isRed,
  seatAt,
  seatIndex,
  seatName,
  watchTable,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./lobby.js";

const END_REASONS: Record<number, string> = {
  [MatchEndReason.TARGET_SCORE]: "reached the target score",
  [MatchEndReason.LOSS_THRESHOLD]: "a side fell below the loss threshold",
  [MatchEndReason.MAX_HANDS]: "the last hand was played",
  [MatchEndReason.CONCESSION]: "a side conceded",
  [MatchEndReason.CLOSED]: "closed by the operator",
};

export function tablePage(
  root: HTMLElement,
  clients: SpadesClients,
  tableId: string,
  signal: AbortSignal,
  connection: HTMLElement,
): void {
  const view = h("section", { class: "table-view", "data-table-id": tableId }, h("p", {}, "Connecting…"));
  replace(root, view);
  void follow(clients, tableId, view, signal, connection);
}

async function follow(
  clients: SpadesClients,
  tableId: string,
  view: HTMLElement,
  signal: AbortSignal,
  connection: HTMLElement,
): Promise<void> {
  let state: TableState | undefined;
  try {
    for await (const message of watchTable(clients, tableId, {
      signal,
      onReconnect: (attempt) => {
        connection.textContent = `reconnecting (attempt ${attempt})…`;
      },
    })) {
      connection.textContent = "live";
      if (message.kind.case === "snapshot" && message.kind.value.view) {
        state = fromSnapshot(message.kind.value.sequence, message.kind.value.view);
      } else if (message.kind.case === "event" && state) {
        fold(state, message.kind.value);
      }
      if (state) render(view, state);
    }
    connection.textContent = state?.end ? "match over" : "stream ended";
  } catch (error) {
    if (!signal.aborted) replace(view, h("p", { class: "message error" }, `Cannot watch this table: ${describe(error)}`));
  }
}

function render(view: HTMLElement, state: TableState): void {
  const players = state.rules?.players ?? 4;
  const seats = Array.from({ length: players }, (_, index) => seatAt(index));
  replace(
    view,
    status(state),
    h("div", { class: `felt players-${players}` },
      ...seats.map((seat) => seatPanel(state, seat)),
      trick(state),
    ),
    scoreTable(state),
  );
}

function status(state: TableState): HTMLElement {
  if (state.end) {
    const winners = state.end.winners.map(seatName).join("–");
    const reason = END_REASONS[state.end.reason] ?? "";
    const scores = state.end.finalScores.join(" – ");
    return h("p", { class: "status match-over" },
      winners ? `Match over: ${winners} win, ${scores}; ${reason}.` : `Match over, no winner, ${scores}; ${reason}.`);
  }
  if (state.handNumber === 0) {
    const free = (state.rules?.players ?? 4) - state.players.size;
    return h("p", { class: "status" }, `Waiting for ${free} more player${free === 1 ? "" : "s"}.`);
  }
  return h("p", { class: "status" }, `Hand ${state.handNumber}`, state.dealer ? ` · dealer ${seatName(state.dealer)}` : "");
}

function seatPanel(state: TableState, seat: Seat): HTMLElement {
  const player = state.players.get(seat);
  const index = seatIndex(seat);
  const bid = state.bids.get(seat);
  return h(
    "div",
    { class: `seat-panel seat-${seatName(seat).toLowerCase()}`, "data-seat": seatName(seat) },
    h("div", { class: "seat-name" },
      h("strong", {}, seatName(seat)),
      " ",
      player ? player.name : "(free)",
      player?.bot ? h("span", { class: "badge" }, "bot") : null,
      state.dealer === seat ? h("span", { class: "badge" }, "dealer") : null,
      state.substituted.has(seat) ? h("span", { class: "badge warn" }, "house bot playing") : null,
    ),
    h("div", { class: "seat-line" },
      h("span", { class: "bid" }, bid ? `bid ${bidLabel(bid)}` : "no bid yet"),
      " · ",
      h("span", { class: "tricks" }, `${state.tricksWon[index] ?? 0} tricks`),
      " · ",
      h("span", { class: "holding" }, `${state.handSizes[index] ?? 0} cards`),
    ),
  );
}

function card(play: PlayedCard): HTMLElement {
  return h("span", {
    class: `card${isRed(play.card) ? " red" : ""}`,
    "data-card": cardKey(play.card),
    title: `${seatName(play.seat)} played ${cardLabel(play.card)}`,
  }, cardLabel(play.card));
}

function trick(state: TableState): HTMLElement {
  const shown = state.currentTrick.length ? state.currentTrick : state.lastTrick;
  return h("div", { class: "trick" },
    ...shown.map((play) => h("div", { class: `played seat-${seatName(play.seat).toLowerCase()}` }, card(play))),
    shown === state.lastTrick && shown.length ? h("div", { class: "caption" }, "last trick") : null,
  );
}

function sideName(side: SideResult): string {
  return side.seats.map(seatName).join("–");
}

function scoreTable(state: TableState): HTMLElement | null {
  const results: HandScored[] = state.handResults;
  if (!results.length) return null;
  const sides = results[0]?.sides ?? [];
  const target = state.rules?.targetScore ?? 500;
  const last = results[results.length - 1];
  return h("section", { class: "scores" },
    h("h2", {}, "Score table"),
    h("table", { class: "score-table" },
      h("thead", {},
        h("tr", {}, h("th", {}, "Hand"), ...sides.map((side) => h("th", { colspan: "5" }, sideName(side)))),
        h("tr", {}, h("th", {}), ...sides.flatMap(() => ["bid", "tricks", "points", "bags", "total"].map((title) => h("th", {}, title)))),
      ),
      h("tbody", {},
        ...results.map((result) => h("tr", { "data-hand": String(result.handNumber) },
          h("td", {}, String(result.handNumber)),
          ...result.sides.flatMap((side) => [
            h("td", {}, side.seatResults.map((seat) => bidLabel(seat.bid)).join(" + ")),
            h("td", {}, String(side.contractTricks)),
            h("td", { class: side.handPoints < 0 ? "negative" : "" }, String(side.handPoints)),
            h("td", {}, String(side.bags)),
            h("td", { class: "total" }, String(side.totalScore)),
          ]),
        )),
      ),
      h("tfoot", {},
        h("tr", {}, h("td", {}, "needs"),
          ...(last?.sides ?? []).map((side) => h("td", { colspan: "5", class: "needs" },
            side.totalScore >= target ? "reached the target" : `${target - side.totalScore} to reach ${target}`))),
      ),
    ),
  );
}
