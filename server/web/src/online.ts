// Online now (#/online): the bots whose account stream is open (PresenceService), each with what
// its manifest says it plays and its ratings; a signed-in person challenges some of them from
// here, either with a partner bot against two bots or as four bots the person watches, for one
// match or a series. A challenge's own page (#/challenge/ID) follows it: the answers, each match
// of the series with its scores, the series' result, and the way to play (#/seat/TABLE/SEAT, the
// person's seat by its session) or watch the match in play.

import {
  type AccountSeat,
  type Challenge,
  type OnlineBot,
  type RuleManifest,
  type SeatHolder,
  type SpadesClients,
  ChallengeState,
  DeclineReason,
  RuleOption,
  Seat,
  defaultRules,
  newRequestId,
  seatName,
} from "@spades/client";
import { SESSION_KEY, bearer, refusal } from "./account.js";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";
import { playerHref } from "./ratings.js";

/** How often a challenge's page asks how it stands. */
const POLL_MILLIS = 1000;

/** Where a challenge's page is. */
export function challengeHref(challengeId: string): string {
  return `#/challenge/${encodeURIComponent(challengeId)}`;
}

/** Where the signed-in person plays a seat it holds at a table (by its session). */
export function accountSeatHref(tableId: string, seat: Seat): string {
  return `#/seat/${encodeURIComponent(tableId)}/${seatName(seat).toLowerCase()}`;
}

/** The credential of ``#/seat/TABLE/SEAT``: the signed-in session, the table and the seat. */
export function accountSeat(tableId: string, seat: string): AccountSeat | undefined {
  const token = localStorage.getItem(SESSION_KEY);
  return token ? { accountToken: token, tableId, seat } : undefined;
}

/** What a manifest says a bot plays, in words. */
export function playsText(manifest: RuleManifest | undefined): string {
  const players = manifest?.players.length ? manifest.players.join(" or ") : "4";
  const low = manifest?.minTargetScore || 100;
  const high = manifest?.maxTargetScore || 1000;
  const options = (manifest?.options ?? []).map((option) => (RuleOption[option] ?? String(option)).toLowerCase());
  const series = Math.max(1, manifest?.maxSeriesLength ?? 0);
  return [
    `${players} players, to ${low}–${high}`,
    ...options,
    series > 1 ? `series of up to ${series}` : "single matches",
  ].join(", ");
}

function onlineRow(bot: OnlineBot): HTMLElement {
  const account = bot.account;
  const ratings = bot.ratings.map((rating) =>
    `${rating.pool} ${(rating.rating?.score ?? 0).toFixed(1)}${rating.rating?.provisional ? " (provisional)" : ""}`);
  const since = bot.onlineSince ? new Date(Number(bot.onlineSince.seconds) * 1000) : undefined;
  return h("tr", { class: "online-bot", "data-account-id": account?.accountId ?? "" },
    h("td", { class: "name" }, h("a", { href: playerHref(account?.accountId ?? ""), class: "player" }, account?.name ?? "")),
    h("td", { class: "plays" }, playsText(account?.manifest)),
    h("td", { class: "ratings" }, ratings.join(", ") || "unrated"),
    h("td", { class: "since" }, since ? since.toISOString().slice(11, 16) + " UTC" : ""),
  );
}

function botSelect(name: string, label: string, bots: OnlineBot[]): [HTMLElement, HTMLSelectElement] {
  const select = h("select", { name, required: true },
    ...bots.map((bot) => h("option", { value: bot.account?.accountId ?? "" }, bot.account?.name ?? ""))) as HTMLSelectElement;
  return [h("label", {}, label, " ", select), select];
}

/** The challenge form: who sits where, how long, rated or not. */
function challengeForm(clients: SpadesClients, token: string, bots: OnlineBot[], message: HTMLElement): HTMLElement {
  const mode = (value: string, text: string, checked: boolean): HTMLElement =>
    h("label", {}, h("input", { type: "radio", name: "mode", value, checked }), " ", text);
  const [partnerLabel, partner] = botSelect("partner", "Your partner (South)", bots);
  const [eastLabel, east] = botSelect("east", "East", bots);
  const [westLabel, west] = botSelect("west", "West", bots);
  const seatSelects = [0, 1, 2, 3].map((index) => botSelect(`bot-${seatName(Seat.NORTH + index).toLowerCase()}`, seatName(Seat.NORTH + index), bots));
  // First choices: different bots where there are enough.
  [partner, east, west].forEach((select, index) => (select.selectedIndex = index % bots.length));
  seatSelects.forEach(([, select], index) => (select.selectedIndex = index % bots.length));
  const withPartner = h("fieldset", { class: "with-partner" }, h("legend", {}, "You sit North"), partnerLabel, eastLabel, westLabel);
  const fourBots = h("fieldset", { class: "four-bots", hidden: true }, h("legend", {}, "The bots at each seat"), ...seatSelects.map(([label]) => label));
  const series = h("input", { name: "series", type: "number", value: "1", min: "1", max: "99" }) as HTMLInputElement;
  const hands = h("input", { name: "hands", type: "number", value: "", min: "1", placeholder: "to the target" }) as HTMLInputElement;
  const rated = h("input", { name: "rated", type: "checkbox" }) as HTMLInputElement;
  const form = h("form", { class: "challenge-bots", "aria-label": "Challenge" },
    h("h2", {}, "Challenge"),
    h("fieldset", { class: "mode" }, h("legend", {}, "Who plays"),
      mode("partner", "You and a partner bot against two bots", true),
      mode("bots", "Four bots (you watch)", false)),
    withPartner,
    fourBots,
    h("label", {}, "Matches in the series ", series),
    h("label", {}, "Hands per match ", hands),
    h("label", {}, "Rated ", rated),
    h("button", { type: "submit" }, "Send the challenge"),
  );
  form.addEventListener("change", () => {
    const four = (form.querySelector("input[name=mode]:checked") as HTMLInputElement | null)?.value === "bots";
    withPartner.hidden = four;
    fourBots.hidden = !four;
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const four = !fourBots.hidden;
    // With a partner: the person and three bots in turn from North (the server's seating), so
    // the partner, named second, sits South. Four bots: each seat as chosen; the person holds none.
    const seating: Omit<SeatHolder, "$typeName">[] = four
      ? seatSelects.map(([, select], index) => ({ seat: Seat.NORTH + index, accountId: select.value }))
      : [];
    const opponentIds = four ? [...new Set(seating.map((holder) => holder.accountId))] : [east.value, partner.value, west.value];
    const rules = defaultRules(hands.value ? { maxHands: Number(hands.value) } : {});
    message.textContent = "Sending…";
    void (async () => {
      try {
        const made = await clients.challenge.createChallenge(
          { opponentIds, rules, rated: rated.checked, seating, seriesLength: Number(series.value) || 1, requestId: newRequestId() },
          bearer(token),
        );
        window.location.hash = challengeHref(made.challenge?.challengeId ?? "");
      } catch (error) {
        message.textContent = `The challenge was not made: ${refusal(error)}`;
        message.classList.add("error");
      }
    })();
  });
  return form;
}

export function onlinePage(root: HTMLElement, clients: SpadesClients, signal: AbortSignal): void {
  const body = h("tbody");
  const message = h("p", { class: "message", role: "status" });
  const below = h("div", { class: "challenge-area" });
  replace(root, h("section", { class: "online" },
    h("h1", {}, "Online now"),
    h("p", { class: "explain" }, "Bots connected to this server now, ready for a challenge: what each plays (its manifest) and its ratings."),
    h("div", { class: "scroll" }, h("table", { class: "online-bots" },
      h("thead", {}, h("tr", {}, ...["Bot", "Plays", "Rating", "Online since"].map((title) => h("th", {}, title)))),
      body)),
    below,
    message,
  ));
  void (async () => {
    try {
      const bots = (await clients.presence.listOnlineBots({}, { signal })).bots;
      replace(body, ...(bots.length ? bots.map(onlineRow) : [h("tr", {}, h("td", { colspan: "4" }, "No bot is online."))]));
      const token = localStorage.getItem(SESSION_KEY);
      if (!token) {
        replace(below, h("p", {}, h("a", { href: "#/account" }, "Sign in"), " to challenge these bots."));
      } else if (bots.length) {
        replace(below, challengeForm(clients, token, bots, message));
      }
    } catch (error) {
      if (!signal.aborted) message.textContent = `Could not load who is online: ${describe(error)}`;
    }
  })();
}

const STATE_WORDS: Record<number, string> = {
  [ChallengeState.PENDING]: "waiting for the answers",
  [ChallengeState.ACCEPTED]: "accepted",
  [ChallengeState.DECLINED]: "declined",
  [ChallengeState.CANCELLED]: "cancelled",
  [ChallengeState.EXPIRED]: "expired",
};

function names(challenge: Challenge): Map<string, string> {
  return new Map([[challenge.challengerId, challenge.challengerName], ...challenge.opponents.map((o) => [o.accountId, o.name] as [string, string])]);
}

/** The series so far: each finished match's scores and winner, and the wins of each side. */
function seriesView(challenge: Challenge): HTMLElement | null {
  const length = Math.max(1, challenge.seriesLength);
  if (length <= 1) return null;
  const over = challenge.series.length >= length;
  const sides = ["North–South", "East–West"];
  const wins = challenge.seriesWins.join(" – ");
  return h("div", { class: "series" },
    h("p", { class: over ? "series-result over" : "series-result" },
      over ? `Series over (${length} matches): ${wins}` : `Match ${challenge.series.length + 1} of ${length}; series so far ${wins}`),
    challenge.series.length === 0 ? null : h("table", { class: "series-matches" },
      h("thead", {}, h("tr", {}, h("th", {}, "Match"), ...sides.map((side) => h("th", {}, side)), h("th", {}, "Won"))),
      h("tbody", {}, ...challenge.series.map((match, index) => h("tr", { "data-table-id": match.tableId },
        h("td", {}, h("a", { href: `#/record/${encodeURIComponent(match.tableId)}` }, String(index + 1))),
        ...match.scores.map((score) => h("td", { class: "score" }, String(score))),
        h("td", {}, match.winningSide ? sides[match.winningSide - 1] ?? "" : "no one"))))),
  );
}

function challengeView(challenge: Challenge, clients: SpadesClients, token: string | null, refresh: () => void): HTMLElement {
  const who = names(challenge);
  const seats = challenge.seating.map((holder) => `${seatName(holder.seat)}: ${who.get(holder.accountId) ?? holder.accountId}`);
  const answers = challenge.opponents.map((opponent) => `${opponent.name}${opponent.accepted ? " ✓" : ""}`);
  const mine = challenge.seating.filter((holder) => holder.accountId === challenge.challengerId);
  const inPlay = challenge.state === ChallengeState.ACCEPTED && challenge.series.length < Math.max(1, challenge.seriesLength);
  const match = Math.max(1, challenge.seriesLength) > 1 ? ` ${challenge.series.length + 1}` : "";
  const actions: HTMLElement[] = [];
  if (inPlay && challenge.tableId) {
    for (const holder of token ? mine : []) {
      actions.push(h("a", { href: accountSeatHref(challenge.tableId, holder.seat), class: "play-match" }, `Play match${match} (${seatName(holder.seat)})`));
    }
    actions.push(h("a", { href: `#/table/${encodeURIComponent(challenge.tableId)}`, class: "watch-match" }, `Watch match${match}`));
  }
  if (challenge.state === ChallengeState.PENDING && token) {
    const cancel = h("button", { type: "button", name: "cancel" }, "Cancel the challenge");
    cancel.addEventListener("click", () => void clients.challenge
      .cancelChallenge({ challengeId: challenge.challengeId, requestId: newRequestId() }, bearer(token))
      .then(refresh, refresh));
    actions.push(cancel);
  }
  const declined = challenge.state === ChallengeState.DECLINED
    ? `Declined by ${who.get(challenge.declinedBy) ?? challenge.declinedBy}: ${(DeclineReason[challenge.declineReason] ?? "").toLowerCase() || "no reason given"}`
    : "";
  return h("div", { class: "challenge-state", "data-state": STATE_WORDS[challenge.state] ?? "" },
    h("p", { class: "state" }, `The challenge is ${STATE_WORDS[challenge.state] ?? "unknown"}.`, declined ? ` ${declined}.` : ""),
    h("p", {}, `Challenged: ${answers.join(", ")}`),
    h("p", {}, `Seats: ${seats.join(", ")}`),
    seriesView(challenge),
    h("p", { class: "actions" }, ...actions.flatMap((action) => [action, " "])),
  );
}

export function challengePage(root: HTMLElement, clients: SpadesClients, challengeId: string, signal: AbortSignal): void {
  const body = h("div", {}, h("p", {}, "Loading…"));
  replace(root, h("section", { class: "challenge-page", "data-challenge-id": challengeId },
    h("h1", {}, "Challenge"), body, h("p", {}, h("a", { href: "#/online" }, "Online now"))));
  const token = localStorage.getItem(SESSION_KEY);
  let shown = "";
  let timer: ReturnType<typeof setInterval> | undefined;
  const load = async (): Promise<void> => {
    try {
      const challenge = (await clients.challenge.getChallenge({ challengeId }, { signal })).challenge;
      if (!challenge || signal.aborted) return;
      // Drawn again only when it changed, so a link is not replaced under the pointer.
      const now = [challenge.state, challenge.tableId, challenge.series.length, ...challenge.opponents.map((o) => o.accepted)].join("|");
      if (now !== shown) replace(body, challengeView(challenge, clients, token, () => void load()));
      shown = now;
      const moving = challenge.state === ChallengeState.PENDING
        || (challenge.state === ChallengeState.ACCEPTED && challenge.series.length < Math.max(1, challenge.seriesLength) && challenge.seriesLength > 1);
      if (!moving) clearInterval(timer);
    } catch (error) {
      if (!signal.aborted) replace(body, h("p", { class: "message error" }, `Cannot show this challenge: ${refusal(error)}`));
      clearInterval(timer);
    }
  };
  void load();
  timer = setInterval(() => void load(), POLL_MILLIS);
  signal.addEventListener("abort", () => clearInterval(timer));
}
