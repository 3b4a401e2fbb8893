// A table, watched live: seats and names, bids, the trick being played (its cards drawn as
// cards, cards.ts; a finished trick's winner marked as the server named it), tricks won, the
// clock of the seat to act, the score table after each hand (bids, tricks, points, bags, what each
// side still needs), and how the match ended. Everything comes from the public Watch stream: a spectator is never sent a card
// that is still in someone's hand, so none can appear here. The lobby's listing of the table
// (GetTable) adds what the view does not hold: the accounts at its seats and whether it is rated.

import {
  type Action,
  type Card,
  type HandScored,
  MatchEndReason,
  type PlayedCard,
  Seat,
  type SeatCredential,
  type SeatStatus,
  type SideResult,
  type SpadesClients,
  type TableState,
  bidLabel,
  cardKey,
  cardLabel,
  cardName,
  fold,
  fromSnapshot,
  act,
  applyTurn,
  bidLabel as bidText,
  playSeat,
  seatAt,
  seatIndex,
  seatName,
  deadlineMillis,
  type TurnPrompt,
  watchTable,
} from "@spades/client";
import { getTournament, tournamentsPage } from "@spades/client";
import { cardColour, cardFace, cardNameText } from "./cards.js";
import { focusFirst, focusedKey, h, replace, rovingGroup } from "./dom.js";
import { describe } from "./errors.js";
import { ratingChanges } from "./rating_changes.js";
import { holder } from "./ratings.js";
import { tournamentHref } from "./tournaments.js";

/** The table as the lobby lists it: its name, the accounts at its seats, whether it is rated,
 * and the tournament it belongs to (found once, for a table named like a tournament's). */
interface Listing {
  tableId: string;
  name: string;
  rated: boolean;
  seats: Map<Seat, SeatStatus>;
  tournament: { id: string; name: string } | undefined;
  /** Draws the page again (once the listing changed). */
  redraw: () => void;
}

/** Fetch the listing again (at the start, and when a seat is taken or left). */
async function relist(clients: SpadesClients, tableId: string, listing: Listing, signal: AbortSignal): Promise<void> {
  try {
    const table = (await clients.lobby.getTable({ tableId }, { signal })).table;
    if (!table) return;
    listing.rated = table.rated;
    listing.seats = new Map(table.seats.map((seat) => [seat.seat, seat]));
    const first = !listing.name;
    listing.name = table.name;
    listing.redraw();
    if (first && TOURNAMENT_TABLE_NAME.test(table.name)) await findTournament(clients, tableId, listing);
  } catch {
    // The listing only adds links and badges: the page works without it.
  }
}

/** A tournament's tables are named "NAME R<round> P<pairing> T<leg>" (the tournament driver). */
const TOURNAMENT_TABLE_NAME = / R\d+ P\d+ T\d+$/;

/** The tournament whose pairings hold the table, among the latest ones named as the table's
 * name begins (the list leaves the pairings out: each candidate is fetched whole). */
async function findTournament(clients: SpadesClients, tableId: string, listing: Listing): Promise<void> {
  const page = await tournamentsPage(clients, "", 50);
  const named = listing.name.replace(TOURNAMENT_TABLE_NAME, "");
  for (const listed of page.tournaments) {
    if ((listed.settings?.name ?? "").slice(0, 40) !== named) continue;
    const tournament = await getTournament(clients, listed.tournamentId);
    const rounds = tournament.pairings.flatMap((round) => round.pairings);
    if (rounds.some((pairing) => pairing.tableIds.includes(tableId))) {
      listing.tournament = { id: tournament.tournamentId, name: tournament.settings?.name ?? tournament.tournamentId };
      listing.redraw();
      return;
    }
  }
}

/** A score as a person reads it beside another: a negative one in brackets, with a real minus
 * sign ("134 – (−78)"). */
export function scoreText(score: number): string {
  return score < 0 ? `(−${-score})` : String(score);
}

/** The sides' names in the order of the scores: a hand's result says them; before the first,
 * the partnerships (or each seat alone at a three-player table). */
function sideNames(state: TableState): string[] {
  const sides = state.handResults[0]?.sides;
  if (sides) return sides.map(sideName);
  const players = state.rules?.players ?? 4;
  if (players === 4) return ["North–South", "East–West"];
  return Array.from({ length: players }, (_, index) => seatName(seatAt(index)));
}

function seatsChanged(kind: string | undefined): boolean {
  return kind === "seatTaken" || kind === "seatLeft";
}

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
  token?: SeatCredential,
): void {
  const view = h("section", { class: "table-view", "data-table-id": tableId }, h("p", {}, "Connecting…"));
  replace(root, view);
  const listing: Listing = { tableId, name: "", rated: false, seats: new Map(), tournament: undefined, redraw: () => undefined };
  void relist(clients, tableId, listing, signal);
  if (token) void play(clients, tableId, token, view, signal, connection, listing);
  else void follow(clients, tableId, view, signal, connection, listing);
  tickClocks(view, signal);
}

/** Count down every clock on the page (``.clock[data-deadline]``, ms since the epoch) each
 * second, until the page is left. */
function tickClocks(view: HTMLElement, signal: AbortSignal): void {
  const timer = setInterval(() => {
    for (const clock of view.querySelectorAll<HTMLElement>(".clock[data-deadline]")) {
      clock.textContent = clockText(Number(clock.dataset.deadline));
    }
    for (const fill of view.querySelectorAll<HTMLElement>(".fill-in[data-deadline]")) {
      fill.textContent = fillText(Number(fill.dataset.deadline));
    }
  }, 1000);
  signal.addEventListener("abort", () => clearInterval(timer));
}

/** Where the lobby keeps when house bots fill a queue's table (ms since the epoch), for the
 * table's page to count down while it waits. */
export function fillKey(tableId: string): string {
  return `spades-fill:${tableId}`;
}

function fillText(deadlineMillis: number): string {
  const left = Math.max(0, Math.ceil((deadlineMillis - Date.now()) / 1000));
  return `house bots fill in ${left} s`;
}

function clockText(deadlineMillis: number): string {
  const left = Math.max(0, Math.ceil((deadlineMillis - Date.now()) / 1000));
  return `${left} s left`;
}

/** The person's seat: what it may see and do, from the Seat stream; its actions through Act. */
interface Seated {
  state: TableState;
  prompt: TurnPrompt | undefined;
  refusal: string;
  chosen: Card[];
  sending: boolean;
}

async function play(
  clients: SpadesClients,
  tableId: string,
  token: SeatCredential,
  view: HTMLElement,
  signal: AbortSignal,
  connection: HTMLElement,
  listing: Listing,
): Promise<void> {
  let seated: Seated | undefined;
  const redraw = (): void => {
    if (seated) render(view, seated.state, listing, seated, (action) => void send(action));
  };
  listing.redraw = redraw;
  const send = async (action: Action): Promise<void> => {
    if (!seated?.prompt || seated.sending) return;
    seated.sending = true;
    const answered = seated.prompt;
    try {
      const result = await act(clients, token, action, answered.sequence);
      if (result.accepted) {
        // The stream may already have brought the next prompt: only this one is answered.
        if (seated.prompt === answered) seated.prompt = undefined;
        seated.refusal = "";
        seated.chosen = [];
      } else {
        seated.refusal = result.reason;
      }
    } catch (error) {
      seated.refusal = `The action was not sent: ${describe(error)}`;
    } finally {
      seated.sending = false;
      redraw();
    }
  };
  try {
    for await (const message of playSeat(clients, token, {
      signal,
      onReconnect: (attempt) => {
        connection.textContent = `reconnecting (attempt ${attempt})…`;
      },
    })) {
      connection.textContent = "live";
      const what = message.kind;
      if (what.case === "snapshot" && what.value.view) {
        seated = { state: fromSnapshot(what.value.sequence, what.value.view, what.value.turn), prompt: undefined, refusal: "", chosen: [], sending: false };
      } else if (what.case === "batch" && seated) {
        applyTurn(seated.state, what.value.turn);
      } else if (what.case === "event" && seated) {
        fold(seated.state, what.value);
        if (seatsChanged(what.value.kind.case)) void relist(clients, tableId, listing, signal);
        // A prompt is withdrawn once the table has moved past it (the clock played, ...).
        if (seated.prompt && what.value.sequence > seated.prompt.sequence) seated.prompt = undefined;
      } else if (what.case === "prompt" && seated) {
        seated.prompt = what.value;
        seated.chosen = [];
      }
      redraw();
    }
    connection.textContent = seated?.state.end ? "match over" : "stream ended";
  } catch (error) {
    if (!signal.aborted) replace(view, h("p", { class: "message error" }, `Cannot play at this table: ${describe(error)}`));
  }
  void tableId;
}

async function follow(
  clients: SpadesClients,
  tableId: string,
  view: HTMLElement,
  signal: AbortSignal,
  connection: HTMLElement,
  listing: Listing,
): Promise<void> {
  let state: TableState | undefined;
  listing.redraw = () => {
    if (state) render(view, state, listing);
  };
  try {
    for await (const message of watchTable(clients, tableId, {
      signal,
      onReconnect: (attempt) => {
        connection.textContent = `reconnecting (attempt ${attempt})…`;
      },
    })) {
      connection.textContent = "live";
      if (message.kind.case === "snapshot" && message.kind.value.view) {
        state = fromSnapshot(message.kind.value.sequence, message.kind.value.view, message.kind.value.turn);
      } else if (message.kind.case === "batch" && state) {
        applyTurn(state, message.kind.value.turn);
      } else if (message.kind.case === "event" && state) {
        fold(state, message.kind.value);
        if (seatsChanged(message.kind.value.kind.case)) void relist(clients, tableId, listing, signal);
      }
      if (state) render(view, state, listing);
    }
    connection.textContent = state?.end ? "match over" : "stream ended";
  } catch (error) {
    if (!signal.aborted) replace(view, h("p", { class: "message error" }, `Cannot watch this table: ${describe(error)}`));
  }
}

function render(
  view: HTMLElement,
  state: TableState,
  listing: Listing,
  seated?: Seated,
  send?: (action: Action) => void,
): void {
  const players = state.rules?.players ?? 4;
  const seats = Array.from({ length: players }, (_, index) => seatAt(index));
  // The page is drawn again on every event: a keyboard user keeps their place in it.
  const focused = focusedKey(view);
  const onTable = trickShown(view, state, listing);
  replace(
    view,
    heading(state, listing),
    status(state, listing),
    state.end && listing.rated && listing.seats.size ? ratingChanges(listing.tableId, listing.seats) : null,
    h("div", { class: `felt players-${players}` },
      ...seats.map((seat) => seatPanel(state, seat, listing, onTable)),
      trick(onTable),
    ),
    seated && send ? seatControls(seated, send, () => render(view, state, listing, seated, send)) : null,
    scoreTable(state),
  );
  if (focused) refocus(view, focused);
}

/** Put the focus back where it was; if that element is gone (the card was played, the bid
 * made), on what the seat may do next: a choice, a playable card, else the hand itself. */
function refocus(view: HTMLElement, focused: string): void {
  const inControls = /^\[data-focus="(card|choice|option|hand)/.test(focused);
  const next = ['.choices button[tabindex="0"]', '.hand button.card[tabindex="0"]', '[data-focus="hand"]'];
  // Waiting in the hand, the focus moves to what the prompt, once it comes, allows.
  const candidates = focused === '[data-focus="hand"]' ? next : inControls ? [focused, ...next] : [focused];
  focusFirst(view, candidates);
}

function sameCard(a: Card | undefined, b: Card): boolean {
  return a !== undefined && a.rank === b.rank && a.suit === b.suit;
}

/** Jokers first (the highest trumps), then spades, hearts, clubs and diamonds (the colours
 * alternating), each high to low. */
const SUIT_ORDER: Record<number, number> = { 0: 0, 4: 1, 3: 2, 1: 3, 2: 4 };

function handOrder(a: Card, b: Card): number {
  return (SUIT_ORDER[a.suit] ?? 5) - (SUIT_ORDER[b.suit] ?? 5) || b.rank - a.rank;
}

/** The person's hand, fanned: each card a button named for a screen reader ("Queen of
 * hearts"), the cards the prompt allows raised and the others disabled (dimmed); the prompt's
 * other choices as buttons. The hand and the choices are each one Tab stop, walked with the
 * arrow keys (dom.ts's rovingGroup). */
function seatControls(seated: Seated, send: (action: Action) => void, redraw: () => void): HTMLElement {
  const prompt = seated.prompt;
  const legal = prompt?.legalActions ?? [];
  const playable = legal.flatMap((action) => (action.kind.case === "playCard" ? [action.kind.value] : []));
  // The card pass is "choose count of these cards" (prompt.cardPass), not a list of every pair.
  const cardPass = prompt?.cardPass;
  const passing = cardPass !== undefined && cardPass.count > 0;
  const hand = [...seated.state.hand].sort(handOrder);
  // The fan: each card turned a little about its foot, the outer ones lower, as held.
  const spread = Math.min(3, 36 / Math.max(hand.length, 1));
  const cards = hand.map((card, index) => {
    const raised = playable.some((allowed) => sameCard(allowed, card));
    const chosen = seated.chosen.some((picked) => sameCard(picked, card));
    const offset = index - (hand.length - 1) / 2;
    const button = h("button", {
      class: `card playing-card hand-card suit-${cardColour(card)}${raised ? " legal" : playable.length ? " dimmed" : ""}${chosen ? " chosen" : ""}`,
      "data-card": cardKey(card),
      "data-focus": `card:${cardKey(card)}`,
      type: "button",
      "aria-pressed": passing ? String(chosen) : undefined,
      disabled: !(raised || passing),
      style: `--angle: ${(offset * spread).toFixed(2)}deg; --drop: ${(offset * offset * 0.03).toFixed(3)}rem`,
    }, cardFace(card), cardNameText(card));
    button.addEventListener("click", () => {
      if (passing) {
        seated.chosen = chosen ? seated.chosen.filter((picked) => !sameCard(picked, card)) : [...seated.chosen, card];
        redraw();
      } else if (prompt) {
        send({ kind: { case: "playCard", value: card } } as Action);
      }
    });
    return button;
  });
  const choices: HTMLElement[] = [];
  for (const action of legal) {
    const what = action.kind;
    let label = "";
    if (what.case === "bid") label = bidText(what.value);
    else if (what.case === "blindNilChoice") label = what.value.blind ? "Bid Blind Nil" : "Look at my cards";
    else continue;
    const button = h("button", { type: "button", class: "choice", "data-choice": label, "data-focus": `choice:${label}` }, label);
    button.addEventListener("click", () => send(action));
    choices.push(button);
  }
  if (passing && cardPass) {
    const count = cardPass.count;
    const button = h("button", { type: "button", class: "choice", "data-choice": "pass", "data-focus": "choice:pass" }, `Pass ${count} cards`);
    button.addEventListener("click", () => {
      const allowed = seated.chosen.every((picked) => cardPass.cards.some((card) => sameCard(card, picked)));
      if (seated.chosen.length === count && allowed) {
        send({ kind: { case: "cardPass", value: { cards: [...seated.chosen] } } } as Action);
      } else { seated.refusal = `Choose ${count} of your cards to pass.`; redraw(); }
    });
    choices.push(button);
  }
  // Not an answer to the prompt, so apart from the choices: the turn's one extension of the clock.
  const options: HTMLElement[] = [];
  if (prompt?.mayClaimExtension) {
    const label = "Claim more time";
    const button = h("button", { type: "button", class: "option", "data-option": "extension", "data-focus": "option:extension" }, label);
    button.addEventListener("click", () => send({ kind: { case: "extensionClaim", value: {} } } as Action));
    options.push(button);
  }
  const you = seated.state.viewer ? seatName(seated.state.viewer) : "";
  const bidding = legal.some((action) => action.kind.case === "bid");
  const over = seated.state.end !== undefined;
  const what = over ? "The match is over." : !prompt ? "Waiting for the others…" : playable.length ? "Your turn: play a card." : passing ? "Choose the cards to pass." : bidding ? "Your turn: bid." : "Your turn.";
  // The turn's clock, from the prompt's deadline (the server's: its time is the table's).
  const deadline = prompt?.deadline;
  const clock = deadline
    ? h("span", { class: "clock", "data-deadline": String(deadlineMillis(deadline)) }, clockText(deadlineMillis(deadline)))
    : null;
  const handGroup = h("div", { class: "hand", role: "group", "aria-label": "Your hand", tabindex: "-1", "data-focus": "hand" }, ...cards);
  rovingGroup(handGroup);
  const choiceGroup = choices.length
    ? h("div", { class: "choices", role: "group", "aria-label": bidding ? "Your bid" : "Your choice" }, ...choices)
    : null;
  if (choiceGroup) rovingGroup(choiceGroup);
  return h("section", { class: "seat-controls", "aria-label": "Your seat" },
    h("p", { class: "prompt" }, `You are ${you}. ${what}`, clock ? " " : null, clock),
    choiceGroup,
    handGroup,
    options.length ? h("div", { class: "options" }, ...options) : null,
    seated.refusal ? h("p", { class: "refusal", role: "alert" }, seated.refusal) : null,
    over ? null : h("p", { class: "keys-hint" }, "Keys: Tab to your hand or your bid, ← → to choose, Enter to play it."),
  );
}

/** The top of the page: the table's name (and its tournament), and the running score. */
function heading(state: TableState, listing: Listing): HTMLElement {
  const names = sideNames(state);
  const scores = names.map((name, index) => `${name} ${scoreText(state.scores[index] ?? 0)}`);
  return h("header", { class: "table-heading" },
    h("h1", { class: "table-name" }, listing.name || "Table"),
    listing.tournament
      ? h("p", { class: "tournament-link" }, "A table of ",
        h("a", { href: tournamentHref(listing.tournament.id) }, listing.tournament.name))
      : null,
    h("p", { class: "running-score", "aria-label": "score" }, scores.join(" – ")),
  );
}

function status(state: TableState, listing: Listing): HTMLElement {
  const line = statusLine(state, listing.tableId);
  if (listing.rated) line.append(" ", h("span", { class: "badge rated" }, "rated"));
  return line;
}

function statusLine(state: TableState, tableId: string): HTMLElement {
  if (state.end) {
    const winners = state.end.winners.map(seatName).join("–");
    const reason = END_REASONS[state.end.reason] ?? "";
    const scores = state.end.finalScores.map(scoreText).join(" – ");
    return h("p", { class: "status match-over" },
      winners ? `Match over: ${winners} win, ${scores}; ${reason}.` : `Match over, no winner, ${scores}; ${reason}.`);
  }
  if (state.handNumber === 0) {
    const free = (state.rules?.players ?? 4) - state.players.size;
    // A queue's table: the lobby kept when the server fills it with house bots.
    const fill = Number(sessionStorage.getItem(fillKey(tableId)) ?? 0);
    const waiting = `Waiting for ${free} more player${free === 1 ? "" : "s"}`;
    if (!fill || !free) return h("p", { class: "status" }, `${waiting}.`);
    return h("p", { class: "status" }, `${waiting}; `,
      h("span", { class: "fill-in", "data-deadline": String(fill) }, fillText(fill)), ".");
  }
  return h("p", { class: "status" }, `Hand ${state.handNumber}`, state.dealer ? ` · dealer ${seatName(state.dealer)}` : "");
}

function seatPanel(state: TableState, seat: Seat, listing: Listing, onTable: OnTable): HTMLElement {
  const player = state.players.get(seat);
  const accountId = player ? listing.seats.get(seat)?.accountId ?? "" : "";
  const index = seatIndex(seat);
  const bid = state.bids.get(seat);
  const won = state.tricksWon[index] ?? 0;
  const held = state.handSizes[index] ?? 0;
  // The table's clock, on the seat to act (the server's deadline: Batch.turn).
  const deadline = state.turn?.seat === seat ? state.turn.deadline : undefined;
  const clock = deadline
    ? h("span", { class: "clock", "data-deadline": String(deadlineMillis(deadline)) }, clockText(deadlineMillis(deadline)))
    : null;
  const wonTrick = onTable.winner?.seat === seat;

  return h(
    "div",
    { class: `seat-panel seat-${seatName(seat).toLowerCase()}${clock ? " on-turn" : ""}${wonTrick ? " trick-winner" : ""}`, "data-seat": seatName(seat) },
    h("div", { class: "seat-name" },
      h("strong", {}, seatName(seat)),
      " ",
      ...(player ? holder(player.name, player.bot, accountId) : ["(free)"]),
      state.dealer === seat ? h("span", { class: "badge" }, "dealer") : null,
      state.substituted.has(seat) ? h("span", { class: "badge warn" }, "house bot playing") : null,
    ),
    h("div", { class: "seat-line" },
      h("span", { class: `chip bid${bid ? "" : " none"}` }, bid ? `bid ${bidLabel(bid)}` : "no bid yet"),
      h("span", { class: `chip tricks${bid && bid.tricks > 0 && won >= bid.tricks ? " made" : ""}` }, `${won} trick${won === 1 ? "" : "s"}`),
      h("span", { class: "chip holding" }, `${held} card${held === 1 ? "" : "s"}`),
      wonTrick ? h("span", { class: "chip won-trick", style: onTable.since }, "won the trick") : null,
      clock ? h("span", { class: "to-act" }, "to act ", clock) : null,
    ),
    // The cards the seat holds, as the edges of a stack of backs (drawn by style.css: cheap,
    // as the page is drawn again on every event).
    seat !== state.viewer && held ? h("div", { class: "held", "aria-hidden": "true", style: `--held: ${held}` }) : null,
  );
}


/** What the middle of the table shows: a trick's cards, and who won it once it is won. */
interface OnTable {
  plays: PlayedCard[];
  winner: PlayedCard | undefined;
  /** How long ago the trick was won, as a style: the page is drawn anew on every event, and
   * the winner's animation carries on from there rather than starting again. */
  since?: string;
}

/** How long a won trick stays on the table after it is won, before the next trick's cards
 * show (house bots lead at once: without it the winner could not be seen). */
const WON_TRICK_MS = 1200;

/** The won trick each page shows, and since when (ms since the epoch). */
const wonTricks = new WeakMap<HTMLElement, { trick: OnTable; since: number; key: string; redrawing: boolean }>();

/** The trick to show: the one being played, or the last one won (its winning card, as
 * TrickWon named it) until the next card, or at least for WON_TRICK_MS after it was won; the
 * page is drawn again when that time is up. */
function trickShown(view: HTMLElement, state: TableState, listing: Listing): OnTable {
  const now = Date.now();
  if (!state.currentTrick.length && state.lastTrick.length) {
    const key = `${state.handNumber}:${state.tricksWon.join(",")}`;
    const trick = { plays: state.lastTrick, winner: state.trickWinner };
    if (wonTricks.get(view)?.key !== key) wonTricks.set(view, { trick, since: now, key, redrawing: false });
    return { ...trick, since: `--won-ago: ${now - (wonTricks.get(view)?.since ?? now)}ms` };
  }
  const held = wonTricks.get(view);
  if (held && state.currentTrick.length && now - held.since < WON_TRICK_MS) {
    if (!held.redrawing) setTimeout(() => listing.redraw(), held.since + WON_TRICK_MS - now);
    held.redrawing = true;
    return { ...held.trick, since: `--won-ago: ${now - held.since}ms` };
  }
  wonTricks.delete(view);
  return { plays: state.currentTrick, winner: undefined };
}

function card(play: PlayedCard): HTMLElement {
  return h("div", {
    class: `card playing-card suit-${cardColour(play.card)}`,
    "data-card": cardKey(play.card),
    title: `${seatName(play.seat)} played ${cardLabel(play.card)}`,
    role: "img",
    "aria-label": `${seatName(play.seat)} played the ${cardName(play.card)}`,
  }, cardFace(play.card));
}

/** The trick on the table: each card before the seat that played it; a won trick's winning
 * card ringed and its winner named. */
function trick(onTable: OnTable): HTMLElement {
  const winner = onTable.winner;
  return h("div", { class: `trick${winner ? " won" : ""}`, role: "group", "aria-label": "The trick" },
    ...onTable.plays.map((play) => h("div", {
      class: `played seat-${seatName(play.seat).toLowerCase()}${winner && sameCard(winner.card, play.card) ? " winning" : ""}`,
      style: winner ? onTable.since : undefined,
    }, card(play))),
    // Said to a screen reader; a sighted person sees the ring and the winner's seat marked.
    winner ? h("div", { class: "caption visually-hidden" }, `${seatName(winner.seat)} won the trick`) : null,
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
    h("h2", { id: "score-table-heading" }, "Score table"),
    // Wider than a phone: it scrolls sideways, and takes the focus so a keyboard can scroll it.
    h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-labelledby": "score-table-heading", "data-focus": "scores" },
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
            // The bag penalty beside the bags, as the command line's score table shows it.
            h("td", { class: "bags" }, side.bagPenaltyPoints ? `${side.bags} (${side.bagPenaltyPoints})` : String(side.bags)),
            h("td", { class: `total${side.totalScore < 0 ? " negative" : ""}` }, scoreText(side.totalScore)),
          ]),
        )),
      ),
      h("tfoot", {},
        h("tr", {}, h("td", {}, "needs"),
          ...(last?.sides ?? []).map((side) => h("td", { colspan: "5", class: "needs" },
            side.totalScore >= target ? "reached the target" : `${target - side.totalScore} to reach ${target}`))),
      ),
    )),
  );
}
