// A finished match's analysis in the record viewer (AnalysisService, docs/analysis.md): asked of
// the server (the kept one, or computed with its progress shown), then each played card
// coloured by the points it lost double dummy, the position behind a card (its best cards and
// every legal card's value, as BBO's "GIB" button shows them), each hand's par beside the bids,
// and each seat's and side's accuracy.

import {
  type AnalysedPlay,
  type Analysis,
  type AnalysisSummary,
  type Card,
  Code,
  ConnectError,
  type SpadesClients,
  cardKey,
  cardLabel,
  isRed,
  refusalOf,
  seatName,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";
import "./analysis.css";

/** From this many points lost, a mistake is shown as large (as `spades-record analyse` does). */
export const LARGE_LOSS = 10;

/** "loss-none", "loss-small" (a few points: bags) or "loss-large" (a contract's worth). */
export function lossClass(play: AnalysedPlay): string {
  if (play.lossPoints === 0) return "loss-none";
  return play.lossPoints < LARGE_LOSS ? "loss-small" : "loss-large";
}

/** The judged play of ``seat`` in trick ``trick`` (from 1) of hand ``hand``, if any. */
export function judgedPlay(analysis: Analysis, hand: number, trick: number, seat: number): AnalysedPlay | undefined {
  return analysis.plays.find((play) => play.hand === hand && play.trick === trick && play.seat === seat);
}

/** The box above the record that asks for the analysis: the kept one at once, else a button
 * that has the server compute it (progress shown); ``loaded`` gets the analysis. */
export function analysisRequest(
  clients: SpadesClients,
  tableId: string,
  signal: AbortSignal,
  loaded: (analysis: Analysis) => void,
): HTMLElement {
  const box = h("div", { class: "analysis-request", role: "status" }, "Looking for an analysis of this match…");
  const compute = (worlds: number | undefined): void => {
    replace(box, h("span", { class: "analysis-progress" }, "Analysing…"));
    void (async () => {
      try {
        for await (const step of clients.analysis.analyseTable({ tableId, worlds }, { signal })) {
          if (step.kind.case === "progress") {
            const { done, total } = step.kind.value;
            replace(box, h("span", { class: "analysis-progress" }, `Analysing: ${done} of ${total} decisions judged`));
          } else if (step.kind.case === "analysis") {
            replace(box, summaryLine(step.kind.value));
            loaded(step.kind.value);
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        const why = error instanceof ConnectError ? refusalOf(error).reasonCode : "";
        replace(box, h("span", { class: "message error", "data-reason": why }, `Cannot analyse this match: ${describe(error)}`));
      }
    })();
  };
  void (async () => {
    try {
      const kept = await clients.analysis.getAnalysis({ tableId }, { signal });
      if (!kept.analysis) throw new Error("the server sent no analysis");
      replace(box, summaryLine(kept.analysis));
      loaded(kept.analysis);
    } catch (error) {
      if (signal.aborted) return;
      if (!(error instanceof ConnectError) || error.code !== Code.NotFound) {
        replace(box, h("span", { class: "message error" }, `Cannot read the analysis: ${describe(error)}`));
        return;
      }
      const full = h("button", { type: "button", name: "analyse" }, "Analyse every card");
      full.addEventListener("click", () => compute(undefined));
      const quick = h("button", { type: "button", name: "analyse-double-dummy" }, "Double dummy only (quick)");
      quick.addEventListener("click", () => compute(0));
      replace(box, "No analysis of this match yet. ", full, " ", quick);
    }
  })();
  return box;
}

function summaryLine(analysis: Analysis): HTMLElement {
  const worlds = analysis.worlds ? `, expected loss over ${analysis.worlds} worlds` : " (double dummy only)";
  return h("span", { class: "analysis-ready" }, `Analysis: every card judged double dummy${worlds}. Click a played card to see its position.`);
}

function cardChip(card: Card | undefined): HTMLElement {
  if (!card) return h("span", {}, "?");
  return h("span", { class: `card${isRed(card) ? " red" : ""}`, "data-card": cardKey(card) }, cardLabel(card));
}

function points(value: number): string {
  return value > 0 ? `+${value}` : String(value);
}

/** The position behind one played card: the card, what it lost, the best cards and every
 * legal card's value, best first (BBO's "GIB" view). */
export function positionView(play: AnalysedPlay): HTMLElement {
  const played = play.card ? cardKey(play.card) : "";
  const best = new Set(play.best.map(cardKey));
  const values = [...play.values].sort((a, b) => b.points - a.points);
  const lost = play.lossPoints
    ? `lost ${play.lossPoints} point${play.lossPoints === 1 ? "" : "s"} and ${play.lossTricks} trick${play.lossTricks === 1 ? "" : "s"} double dummy`
    : "one of the best cards";
  const expected = play.expectedLossPoints === undefined
    ? null
    : h("p", { class: "expected-loss" },
        `From what ${seatName(play.seat)} could see: ${play.expectedLossPoints.toFixed(1)} points lost on average`
        + (play.expectedLossSe === undefined ? "" : ` (± ${play.expectedLossSe.toFixed(1)})`)
        + ` over ${play.worlds} worlds.`);
  return h("section", { class: "position", "data-hand": String(play.hand), "data-trick": String(play.trick), "data-seat": seatName(play.seat) },
    h("h3", {}, `Trick ${play.trick}: ${seatName(play.seat)} played `, cardChip(play.card), ` (${lost})`),
    h("p", { class: "best-cards" }, "Best: ", ...play.best.map(cardChip)),
    h("table", { class: "card-values" },
      h("thead", {}, h("tr", {}, h("th", {}, "Card"), h("th", {}, "Value (points for the side)"), h("th", {}, ""))),
      h("tbody", {}, ...values.map((each) => {
        const key = each.card ? cardKey(each.card) : "";
        const marks = [best.has(key) ? "best" : "", key === played ? "played" : ""].filter(Boolean);
        return h("tr", { class: marks.join(" "), "data-card": key },
          h("td", {}, cardChip(each.card)), h("td", { class: "value" }, points(each.points)), h("td", {}, marks.join(", ")));
      })),
    ),
    expected,
  );
}

/** "Par: North–South 5, East–West 8" for one hand (what each side takes double dummy). */
export function parLine(analysis: Analysis, hand: number): HTMLElement | null {
  const judged = analysis.hands.find((each) => each.hand === hand);
  if (!judged || !judged.parTricks.length) return null;
  return h("p", { class: "par" }, "Double-dummy par: ", judged.parTricks
    .map((side) => `${side.seats.map(seatName).join("–")} ${side.tricks ?? "?"}`)
    .join(", "));
}

function summaryRow(name: string, summary: AnalysisSummary): HTMLElement {
  const expected = summary.expectedLossPoints === undefined
    ? "–"
    : summary.expectedLossPoints.toFixed(1) + (summary.expectedLossSe === undefined ? "" : ` ± ${summary.expectedLossSe.toFixed(1)}`);
  return h("tr", { "data-who": name },
    h("th", {}, name),
    h("td", {}, String(summary.plays)),
    h("td", { class: "accuracy" }, `${Math.round(summary.accuracy * 100)}%`),
    h("td", {}, String(summary.lossPoints)),
    h("td", {}, summary.lossPointsPerHand.toFixed(1)),
    h("td", {}, String(summary.lossTricks)),
    h("td", {}, expected),
  );
}

/** Each seat's and side's totals: plays, accuracy, points and tricks lost, expected loss. */
export function accuracyTable(analysis: Analysis): HTMLElement {
  const header = ["", "Plays", "Accuracy", "Points lost", "Per hand", "Tricks lost", "Expected loss"];
  return h("table", { class: "accuracy-table" },
    h("thead", {}, h("tr", {}, ...header.map((title) => h("th", {}, title)))),
    h("tbody", {},
      ...analysis.seats.map((seat) => summaryRow(seat.seats.map(seatName).join("–"), seat)),
      ...(analysis.sides.length && analysis.sides[0]?.seats.length !== 1
        ? analysis.sides.map((side) => summaryRow(side.seats.map(seatName).join("–"), side))
        : []),
    ),
  );
}
