// A finished match's record, step by step: each hand's deal (every seat's cards, once the match
// is over), the bids, every trick in turn, the hand's score, the seats' sealed notes beside the
// bid or card they explain (docs/records.md); and whether the deals are the revealed seed's
// (checked here, in the browser, with spades-shuffle-v1). A finished table's record from the
// server also shows its analysis (analysis.ts): each card coloured by its loss, the position
// behind a card, the par and each seat's accuracy.

import {
  type AnalysedPlay,
  type Analysis,
  type Bid,
  type Card,
  type GameRecord,
  GameRecordSchema,
  type HandScored,
  Seat,
  type SpadesClients,
  bidLabel,
  cardKey,
  cardLabel,
  fromBinary,
  fromJsonString,
  isRed,
  seatName,
  verifyRecord,
} from "@spades/client";
import { accuracyTable, analysisRequest, judgedPlay, lossClass, parLine, positionView } from "./analysis.js";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";

interface Trick {
  plays: { seat: Seat; card: Card; note: string | undefined }[];
  winner: Seat | undefined;
}

interface Hand {
  number: number;
  dealer: Seat | undefined;
  dealt: Map<Seat, Card[]>;
  bids: { seat: Seat; bid: Bid; note: string | undefined }[];
  tricks: Trick[];
  scored: HandScored | undefined;
}

/** The record's hands, in order, from its events, each bid and card with its sealed note. */
export function handsOf(record: GameRecord): Hand[] {
  const notes = new Map(record.notes.map((note) => [note.sequence, note.text]));
  const hands: Hand[] = [];
  let hand: Hand | undefined;
  for (const event of record.events) {
    const note = notes.get(event.sequence);
    const what = event.kind;
    if (what.case === "handStarted") {
      hand = { number: what.value.handNumber, dealer: what.value.dealer, dealt: new Map(), bids: [], tricks: [], scored: undefined };
      hands.push(hand);
    } else if (!hand) {
      continue;
    } else if (what.case === "cardsDealt" && what.value.cards.length) {
      hand.dealt.set(what.value.seat, [...what.value.cards]);
    } else if (what.case === "bidMade" && what.value.bid) {
      hand.bids.push({ seat: what.value.seat, bid: what.value.bid, note });
    } else if (what.case === "cardPlayed" && what.value.card) {
      const last = hand.tricks[hand.tricks.length - 1];
      const trick = last && last.winner === undefined ? last : { plays: [], winner: undefined };
      if (trick !== last) hand.tricks.push(trick);
      trick.plays.push({ seat: what.value.seat, card: what.value.card, note });
    } else if (what.case === "trickWon") {
      const last = hand.tricks[hand.tricks.length - 1];
      if (last) last.winner = what.value.winner;
    } else if (what.case === "handScored") {
      hand.scored = what.value;
    }
  }
  return hands;
}

export function recordPage(root: HTMLElement, clients: SpadesClients, tableId: string, signal: AbortSignal): void {
  const view = h("section", { class: "record-view" }, h("p", {}, "Loading the record…"));
  replace(root, view);
  void (async () => {
    try {
      const response = await clients.play.getRecord({ tableId }, { signal });
      if (!response.record) throw new Error("the server sent no record");
      await show(view, response.record, { clients, tableId, signal });
    } catch (error) {
      if (!signal.aborted) replace(view, h("p", { class: "message error" }, `Cannot open the record: ${describe(error)}`));
    }
  })();
}

/** A record from a file (.json: protobuf JSON, else binary), as spades-record writes them. */
export async function openRecordFile(root: HTMLElement, file: File): Promise<void> {
  const view = h("section", { class: "record-view" }, h("p", {}, `Reading ${file.name}…`));
  replace(root, view);
  try {
    const record = file.name.endsWith(".json")
      ? fromJsonString(GameRecordSchema, await file.text())
      : fromBinary(GameRecordSchema, new Uint8Array(await file.arrayBuffer()));
    await show(view, record);
  } catch (error) {
    replace(view, h("p", { class: "message error" }, `${file.name} is not a game record: ${String(error)}`));
  }
}

/** Where a record came from, when a server can analyse it. */
interface AnalysisSource {
  clients: SpadesClients;
  tableId: string;
  signal: AbortSignal;
}

/** What the analysis adds to a hand's view: each card's judgement, the card picked. */
interface Judged {
  analysis: Analysis;
  picked: AnalysedPlay | undefined;
  pick: (play: AnalysedPlay) => void;
}

async function show(view: HTMLElement, record: GameRecord, source?: AnalysisSource): Promise<void> {
  const verification = await verifyRecord(record);
  const hands = handsOf(record);
  const names = new Map(record.players.map((player) => [player.seat, player.name]));
  let handIndex = 0;
  let trickCount = 0;
  let judged: Judged | undefined;
  // Only a finished match (its seed revealed) is analysed; the box stays across redraws.
  const request = source && record.seed.length
    ? analysisRequest(source.clients, source.tableId, source.signal, (analysis) => {
        judged = { analysis, picked: undefined, pick: (play) => { if (judged) judged.picked = play; draw(); } };
        draw();
      })
    : null;
  const draw = (): void => {
    const hand = hands[handIndex];
    replace(
      view,
      h("h1", {}, `Record of table ${record.tableId}`),
      h("div", { class: `verification ${verification.ok ? "ok" : "failed"}`, role: "status" },
        h("strong", {}, verification.ok ? "Record verified" : "Record not verified"),
        ...verification.lines.map((line) => h("div", {}, line)),
      ),
      request,
      judged ? accuracyTable(judged.analysis) : null,
      h("div", { class: "hand-picker" },
        ...hands.map((each, index) => {
          const button = h("button", { type: "button", class: index === handIndex ? "current" : "", "data-hand": String(each.number) }, `Hand ${each.number}`);
          button.addEventListener("click", () => { handIndex = index; trickCount = 0; draw(); });
          return button;
        }),
      ),
      hand ? handView(hand, names, trickCount, (count) => { trickCount = count; draw(); }, judged) : h("p", {}, "No hand was dealt."),
    );
  };
  draw();
}

function cardSpan(card: Card): HTMLElement {
  return h("span", { class: `card${isRed(card) ? " red" : ""}`, "data-card": cardKey(card) }, cardLabel(card));
}

/** The sealed notes of some bids or cards, one a line: "North (4♣): why". */
function notesList(noted: { seat: Seat; what: string; note: string | undefined }[]): HTMLElement | null {
  const shown = noted.filter((each) => each.note);
  if (!shown.length) return null;
  return h("ul", { class: "sealed-notes" },
    ...shown.map((each) => h("li", { class: "sealed-note", "data-seat": seatName(each.seat) },
      h("strong", {}, `${seatName(each.seat)} (${each.what}): `), each.note ?? "")));
}

/** A played card, coloured by the points it lost when the match is analysed (click: its position). */
function playedCard(card: Card, judgement: AnalysedPlay | undefined, judged: Judged | undefined): HTMLElement[] {
  const span = cardSpan(card);
  if (!judgement || !judged) return [span];
  const loss = lossClass(judgement);
  span.classList.add("judged", loss);
  if (judged.picked === judgement) span.classList.add("picked");
  span.setAttribute("data-loss", String(judgement.lossPoints));
  span.title = judgement.lossPoints ? `lost ${judgement.lossPoints} points double dummy` : "one of the best cards";
  span.addEventListener("click", () => judged.pick(judgement));
  return judgement.lossPoints ? [span, h("span", { class: `loss ${loss}` }, `−${judgement.lossPoints}`)] : [span];
}

function handView(hand: Hand, names: Map<Seat, string>, shown: number, step: (count: number) => void, judged?: Judged): HTMLElement {
  const who = (seat: Seat | undefined): string => (seat ? `${seatName(seat)} (${names.get(seat) ?? "?"})` : "?");
  const previous = h("button", { type: "button", name: "previous-trick" }, "◀ previous trick");
  previous.addEventListener("click", () => step(Math.max(0, shown - 1)));
  const next = h("button", { type: "button", name: "next-trick" }, "next trick ▶");
  next.addEventListener("click", () => step(Math.min(hand.tricks.length, shown + 1)));
  return h("section", { class: "record-hand", "data-hand": String(hand.number) },
    h("h2", {}, `Hand ${hand.number}, dealt by ${who(hand.dealer)}`),
    h("div", { class: "deals" },
      ...[...hand.dealt.entries()].map(([seat, cards]) => h("div", { class: "deal", "data-seat": seatName(seat) },
        h("strong", {}, who(seat)), " ", ...cards.map(cardSpan))),
    ),
    h("p", { class: "bids" }, "Bids: ", hand.bids.map((bid) => `${seatName(bid.seat)} ${bidLabel(bid.bid)}`).join(", ")),
    judged ? parLine(judged.analysis, hand.number) : null,
    notesList(hand.bids.map((bid) => ({ seat: bid.seat, what: `bid ${bidLabel(bid.bid)}`, note: bid.note }))),
    h("div", { class: "steps" }, previous, h("span", { class: "trick-count" }, ` ${shown} of ${hand.tricks.length} tricks `), next),
    h("ol", { class: "tricks" },
      ...hand.tricks.slice(0, shown).map((trick, index) => h("li", { class: "record-trick" },
        ...trick.plays.flatMap((play) => [
          `${seatName(play.seat)} `,
          ...playedCard(play.card, judged && judgedPlay(judged.analysis, hand.number, index + 1, play.seat), judged),
          " ",
        ]),
        ` → ${trick.winner ? seatName(trick.winner) : "?"}`,
        notesList(trick.plays.map((play) => ({ seat: play.seat, what: cardLabel(play.card), note: play.note }))))),
    ),
    judged?.picked && judged.picked.hand === hand.number ? positionView(judged.picked) : null,
    hand.scored && shown === hand.tricks.length
      ? h("p", { class: "hand-score" }, "Score: ", hand.scored.sides.map((side) =>
          `${side.seats.map(seatName).join("–")} ${side.handPoints} (total ${side.totalScore})`).join(", "))
      : null,
  );
}
