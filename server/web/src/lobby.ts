// The lobby: every table live (status, seats with their accounts, badges, scores), a form to
// open a table (public or private, with the rule variations the server shows as its badges) and
// fill it with house bots to watch or sit down with, and the way to the leaderboards.

import {
  POOLS,
  HouseBotKind,
  PlayDirection,
  type RuleSet,
  Seat,
  type SpadesClients,
  type Table,
  TableStatus,
  defaultRules,
  newRequestId,
  retried,
  seatName,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";
import { holder, leaderboardHref } from "./ratings.js";
import { openRecordFile } from "./record.js";

const STATUS_LABELS: Record<number, string> = {
  [TableStatus.WAITING]: "waiting",
  [TableStatus.PLAYING]: "playing",
  [TableStatus.FINISHED]: "finished",
};

export function lobbyPage(root: HTMLElement, clients: SpadesClients, signal: AbortSignal): void {
  const list = h("tbody");
  const message = h("p", { class: "message", role: "status" });
  const name = h("input", { name: "name", value: "Friendly table", maxlength: "64", required: true }) as HTMLInputElement;
  const target = h("input", { name: "target", type: "number", value: "500", min: "100", max: "1000", step: "50" }) as HTMLInputElement;
  const hands = h("input", { name: "hands", type: "number", value: "0", min: "0", max: "100" }) as HTMLInputElement;
  const houseBots = h("input", { name: "house-bots", type: "number", value: "4", min: "0", max: "4" }) as HTMLInputElement;
  const privateTable = h("input", { name: "private", type: "checkbox" }) as HTMLInputElement;
  const variations = variationInputs();
  const rules = (): RuleSet => chosenRules(Number(target.value), Number(hands.value), variations);
  const player = h("input", { name: "player", value: "Me", maxlength: "32" }) as HTMLInputElement;
  const quick = h("button", { type: "button", name: "quick-match" }, "Quick match");
  quick.addEventListener("click", () => void quickMatch(clients, player.value, message));
  const sit = h("button", { type: "button", name: "sit" }, "Sit down with house bots");
  sit.addEventListener("click", () => void sitDown(clients, name.value, rules(), player.value, message));
  const form = h(
    "form",
    { class: "create" },
    h("h2", {}, "Open a table"),
    h("label", {}, "Name ", name),
    h("label", {}, "Target score ", target),
    h("label", {}, "Hands at most (0: no cap) ", hands),
    h("label", {}, "House bots to seat ", houseBots),
    h("label", {}, "Private (joined with a code) ", privateTable),
    h("fieldset", { class: "variations" },
      h("legend", {}, "Rules (the table's badges)"),
      ...variations.map((variation) => h("label", {}, `${variation.label} `, variation.input)),
    ),
    h("button", { type: "submit" }, "Open the table"),
    h("h2", {}, "Or play"),
    h("label", {}, "Your name ", player),
    sit,
    quick,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void openTable(clients, name.value, rules(), Number(houseBots.value), privateTable.checked, message);
  });
  replace(
    root,
    h("section", { class: "lobby" },
      h("h1", {}, "Tables"),
      h("nav", { class: "pools" }, "Leaderboards: ",
        ...POOLS.map((pool) => h("a", { href: leaderboardHref(pool), class: "pool" }, pool))),
      h("table", { class: "tables" },
        h("thead", {}, h("tr", {}, ...["Table", "Status", "Seats", "Rules", "Score", "Hand", ""].map((title) => h("th", {}, title)))),
        list,
      ),
    ),
    form,
    recordFile(root),
    message,
  );
  void refresh(clients, list, message, signal);
}

async function refresh(
  clients: SpadesClients,
  list: HTMLElement,
  message: HTMLElement,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const tables: Table[] = [];
      let pageToken = "";
      do {
        const page = await clients.lobby.listTables({ pageSize: 100, pageToken }, { signal });
        tables.push(...page.tables);
        pageToken = page.nextPageToken;
      } while (pageToken && tables.length < 500);
      replace(list, ...(tables.length ? tables.map(tableRow) : [h("tr", {}, h("td", { colspan: "7" }, "No tables yet: open one below."))]));
    } catch (error) {
      if (signal.aborted) return;
      message.textContent = `Could not list the tables: ${describe(error)}`;
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function tableRow(table: Table): HTMLElement {
  const seats = table.seats.map((seat) =>
    h("span", { class: seat.occupied ? "seat taken" : "seat free", "data-seat": seatName(seat.seat) },
      `${seatName(seat.seat)}: `,
      ...(!seat.occupied ? ["free"] : seat.accountId ? holder(seat.playerName, seat.bot, seat.accountId) : [seat.playerName + (seat.bot ? " (bot)" : "")])),
  );
  return h(
    "tr",
    { "data-table-id": table.tableId },
    h("td", {}, table.name, table.rated ? h("span", { class: "badge rated" }, "rated") : null),
    h("td", { class: "status" }, STATUS_LABELS[table.status] ?? "?"),
    h("td", { class: "seats" }, ...seats),
    h("td", {}, ...table.badges.map((badge) => h("span", { class: "badge" }, badge))),
    h("td", {}, table.scores.join(" – ")),
    h("td", {}, table.handNumber ? String(table.handNumber) : ""),
    h("td", {},
      h("a", { href: `#/table/${encodeURIComponent(table.tableId)}`, class: "watch" }, "Watch"),
      table.status === TableStatus.FINISHED
        ? h("a", { href: `#/record/${encodeURIComponent(table.tableId)}`, class: "record" }, " Record")
        : null,
    ),
  );
}

/** One rule variation the form offers: its input, and what it sets in the RuleSet. */
interface Variation {
  label: string;
  input: HTMLInputElement;
  apply: (rules: RuleSet, input: HTMLInputElement) => void;
}

function checkbox(name: string): HTMLInputElement {
  return h("input", { name, type: "checkbox" }) as HTMLInputElement;
}

function number(name: string, value: string, min: string, max: string): HTMLInputElement {
  return h("input", { name, type: "number", value, min, max }) as HTMLInputElement;
}

/** The variations of docs/rules.md a host may choose (the server checks the combination and
 * says what is wrong with one it refuses; it also names the badges the lobby shows). */
function variationInputs(): Variation[] {
  return [
    { label: "Cutthroat (3 players, each alone)", input: checkbox("cutthroat"), apply: (rules, input) => { if (input.checked) rules.players = 3; } },
    { label: "No Nil", input: checkbox("no-nil"), apply: (rules, input) => { rules.nilDisabled = input.checked; } },
    { label: "Blind Nil", input: checkbox("blind-nil"), apply: (rules, input) => { rules.blindNil = input.checked; } },
    { label: "Blind Nil card pass (2 cards)", input: checkbox("blind-nil-pass"), apply: (rules, input) => { rules.blindNilPassCards = input.checked ? 2 : 0; } },
    { label: "Nil tricks count for partner", input: checkbox("nil-tricks-count"), apply: (rules, input) => { rules.nilTricksCountForPartner = input.checked; } },
    { label: "2♣ leads", input: checkbox("two-of-clubs-leads"), apply: (rules, input) => { rules.twoOfClubsLeads = input.checked; } },
    { label: "Big joker, little joker", input: checkbox("jokers"), apply: (rules, input) => { rules.jokers = input.checked; } },
    { label: "Spades may be led any time", input: checkbox("spades-lead-any-time"), apply: (rules, input) => { rules.spadesLeadAnyTime = input.checked; } },
    { label: "Counter-clockwise", input: checkbox("counter-clockwise"), apply: (rules, input) => { if (input.checked) rules.direction = PlayDirection.COUNTER_CLOCKWISE; } },
    { label: "Minimum team bid (0: none)", input: number("minimum-team-bid", "0", "0", "13"), apply: (rules, input) => { rules.minimumTeamBid = Number(input.value); } },
    { label: "Mercy: lose at or below (0: off)", input: number("loss-threshold", "0", "-1000", "0"), apply: (rules, input) => { rules.lossThreshold = Number(input.value); } },
    { label: "Seconds a turn", input: number("turn-seconds", "30", "1", "600"), apply: (rules, input) => { if (rules.clock) rules.clock.turnMillis = Number(input.value) * 1000; } },
  ];
}

function chosenRules(target: number, hands: number, variations: Variation[]): RuleSet {
  const rules = defaultRules({ targetScore: target, maxHands: hands });
  for (const variation of variations) variation.apply(rules, variation.input);
  return rules;
}

async function openTable(
  clients: SpadesClients,
  name: string,
  rules: RuleSet,
  houseBots: number,
  isPrivate: boolean,
  message: HTMLElement,
): Promise<void> {
  try {
    const create = { name, rules, private: isPrivate };
    const createId = newRequestId();
    const created = await retried(() => clients.lobby.createTable({ ...create, requestId: createId }));
    const tableId = created.table?.tableId ?? "";
    const joinCode = created.joinCode;
    for (let index = 0; index < Math.min(houseBots, rules.players); index++) {
      const requestId = newRequestId();
      await retried(() => clients.lobby.addHouseBot({ tableId, kind: HouseBotKind.HEURISTIC, joinCode, requestId }));
    }
    if (joinCode) {
      // Shown once: a private table is joined with its id and this code.
      message.replaceChildren(
        h("span", { class: "join-code" }, `Private table ${tableId}: join code ${joinCode} (shown only once). `),
        h("a", { href: `#/table/${encodeURIComponent(tableId)}` }, "Watch it"),
      );
      return;
    }
    location.hash = `#/table/${encodeURIComponent(tableId)}`;
  } catch (error) {
    message.textContent = `The table was not opened: ${describe(error)}`;
  }
}

function recordFile(root: HTMLElement): HTMLElement {
  const input = h("input", { type: "file", name: "record-file", accept: ".json,.pb,.bin" }) as HTMLInputElement;
  input.addEventListener("change", () => {
    const file = input.files?.[0];
    if (file) void openRecordFile(root, file);
  });
  return h("section", { class: "open-record" }, h("h2", {}, "Open a record file"), input);
}

/** Where a tab keeps the seat token of the table it plays at. */
export function seatKey(tableId: string): string {
  return `spades-seat:${tableId}`;
}

async function sitDown(
  clients: SpadesClients,
  name: string,
  rules: RuleSet,
  playerName: string,
  message: HTMLElement,
): Promise<void> {
  try {
    const createId = newRequestId();
    const created = await retried(() => clients.lobby.createTable({ name, rules, requestId: createId }));
    const tableId = created.table?.tableId ?? "";
    const joinId = newRequestId();
    const joined = await retried(() =>
      clients.lobby.joinTable({ tableId, seat: Seat.SOUTH, playerName, bot: false, requestId: joinId }),
    );
    sessionStorage.setItem(seatKey(tableId), joined.seatToken);
    // Every other seat: three at partnership tables, two at cutthroat.
    for (let index = 1; index < rules.players; index++) {
      const requestId = newRequestId();
      await retried(() => clients.lobby.addHouseBot({ tableId, kind: HouseBotKind.HEURISTIC, requestId }));
    }
    location.hash = `#/play/${encodeURIComponent(tableId)}`;
  } catch (error) {
    message.textContent = `Could not sit down: ${describe(error)}`;
  }
}

async function quickMatch(clients: SpadesClients, playerName: string, message: HTMLElement): Promise<void> {
  try {
    const requestId = newRequestId();
    const matched = await retried(() => clients.lobby.quickMatch({ playerName, bot: false, requestId }));
    const seat = matched.seat;
    if (!seat) throw new Error("the server gave no seat");
    sessionStorage.setItem(seatKey(seat.tableId), seat.seatToken);
    location.hash = `#/play/${encodeURIComponent(seat.tableId)}`;
  } catch (error) {
    message.textContent = `Quick match failed: ${describe(error)}`;
  }
}
