// Each entrant's accuracy on a finished tournament's page (docs/analysis.md, "A tournament"):
// the share of its plays that lost no points double dummy, over every table it played, as the
// server sums it up (AnalysisService.AnalyseTournament, from the analyses it keeps). Until every
// table is analysed the page says how many are and offers to analyse the others (double dummy
// only). Only once the tournament has ended: a live table is never analysed.

import {
  type EntrantAnalysis,
  Code,
  ConnectError,
  type SpadesClients,
  type Tournament,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";

/** Every table the tournament's pairings played (a bye has none). */
function tablesOf(tournament: Tournament): string[] {
  return tournament.pairings.flatMap((round) =>
    round.pairings.filter((pairing) => pairing.awayAccountId).flatMap((pairing) => pairing.tableIds));
}

function percent(part: number, whole: number): string {
  return whole ? `${Math.round((100 * part) / whole)}%` : "—";
}

function accuracyTable(entrants: EntrantAnalysis[]): HTMLElement {
  const headings = ["Entrant", "Plays", "Accuracy", "Points lost per hand"];
  return h("table", { class: "board entrant-accuracy" },
    h("thead", {}, h("tr", {}, ...headings.map((title) => h("th", {}, title)))),
    h("tbody", {}, ...entrants.map((entrant) => {
      const plays = entrant.total?.plays ?? 0;
      const hands = entrant.total?.hands ?? 0;
      return h("tr", { "data-account-id": entrant.accountId },
        h("td", { class: "name" }, entrant.name),
        h("td", { class: "plays" }, String(plays)),
        h("td", { class: "accuracy" }, percent(Math.round((entrant.total?.accuracy ?? 0) * plays), plays)),
        h("td", { class: "per-hand" }, hands ? (entrant.total?.lossPointsPerHand ?? 0).toFixed(1) : "—"));
    })));
}

/** The accuracy section of a finished tournament's page: how many of its tables the server has
 * analysed; once all are, each entrant's totals (AnalyseTournament, at once from the kept
 * analyses); until then a button that has the server analyse the others (double dummy). */
export function accuracySection(clients: SpadesClients, tournament: Tournament, signal: AbortSignal): HTMLElement {
  const body = h("div", { class: "accuracy-body", role: "status" }, "Reading the analyses of its tables…");
  const tables = tablesOf(tournament);
  const explain = (analysed: number): HTMLElement => h("p", { class: "explain" },
    "The share of each entrant's plays that lost no points double dummy, over the tables analysed ",
    `(${analysed} of ${tables.length}).`);
  const analyse = async (): Promise<void> => {
    try {
      const request = { tournamentId: tournament.tournamentId, worlds: 0 };
      for await (const step of clients.analysis.analyseTournament(request, { signal })) {
        if (step.kind.case === "progress") {
          const progress = step.kind.value;
          replace(body, h("span", { class: "analysis-progress" },
            `Analysing table ${progress.tablesDone + 1} of ${progress.tablesTotal}…`));
        } else if (step.kind.case === "analysis") {
          replace(body, explain(tables.length), accuracyTable(step.kind.value.entrants));
        }
      }
    } catch (error) {
      if (!signal.aborted) replace(body, h("p", { class: "message error" }, `Could not analyse: ${describe(error)}`));
    }
  };
  void (async () => {
    try {
      let analysed = 0;
      for (const tableId of tables) {
        try {
          await clients.analysis.getAnalysis({ tableId }, { signal });
          analysed += 1;
        } catch (error) {
          if (!(error instanceof ConnectError) || error.code !== Code.NotFound) throw error;
        }
      }
      if (signal.aborted) return;
      if (analysed === tables.length) {
        await analyse();  // every table kept: the totals at once, nothing judged
        return;
      }
      const missing = tables.length - analysed;
      const button = h("button", { type: "button", name: "analyse-tournament" },
        `Analyse the other ${missing} table${missing === 1 ? "" : "s"} (double dummy)`);
      button.addEventListener("click", () => void analyse());
      replace(body, explain(analysed), h("p", {}, button));
    } catch (error) {
      if (!signal.aborted) replace(body, h("p", { class: "message error" }, `Could not read the analyses: ${describe(error)}`));
    }
  })();
  return h("section", { class: "tournament-accuracy" }, h("h2", {}, "Accuracy"), body);
}
