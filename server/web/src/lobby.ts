// The lobby: every table live (status, seats with their accounts, badges, scores), a form to
// open a table (public or private, with the rule variations the server shows as its badges; their
// controls come from the table of variations, through variations.generated.ts) and fill it with
// house bots to watch or sit down with, and the way to the leaderboards.

import {
  POOLS,
  HouseBotKind,
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
import { fillKey } from "./table.js";
import { VARIATION_CONTROLS, type VariationControl } from "./variations.generated.js";

const STATUS_LABELS: Record<number, string> = {
  [TableStatus.WAITING]: "waiting",
  [TableStatus.PLAYING]: "playing",
  [TableStatus.FINISHED]: "finished",
};

export function lobbyPage(root: HTMLElement, clients: SpadesClients, signal: AbortSignal): void {
  const list = h("tbody");
  const message = h("p", { class: "message", role: "status" });
  const name = h("input", { name: "name", value: "Friendly table", maxlength: "64", required: true }) as HTMLInputElement;
  const houseBots = h("input", { name: "house-bots", type: "number", value: "4", min: "0", max: "4" }) as HTMLInputElement;
  const privateTable = h("input", { name: "private", type: "checkbox" }) as HTMLInputElement;
  const variations = variationInputs();
  const rules = (): RuleSet => chosenRules(variations);
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
    ...variations.filter((variation) => variation.control.besideName).map(variationLabel),
    h("label", {}, "House bots to seat ", houseBots),
    h("label", {}, "Private (joined with a code) ", privateTable),
    h("fieldset", { class: "variations" },
      h("legend", {}, "Rules (the table's badges)"),
      ...variations.filter((variation) => !variation.control.besideName).map(variationLabel),
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

/** One rule variation the form offers: its control (generated from the table of variations) and
 * its input. */
interface Variation {
  control: VariationControl;
  input: HTMLInputElement;
}

/** The variations of docs/rules.md a host may choose (the server checks the combination and
 * says what is wrong with one it refuses; it also names the badges the lobby shows). */
function variationInputs(): Variation[] {
  return VARIATION_CONTROLS.map((control) => ({
    control,
    input: h("input", { name: control.name, type: control.kind, ...control.attributes }) as HTMLInputElement,
  }));
}

function variationLabel(variation: Variation): HTMLElement {
  return h("label", {}, `${variation.control.label} `, variation.input);
}

function chosenRules(variations: Variation[]): RuleSet {
  const rules = defaultRules();
  for (const variation of variations) variation.control.apply(rules, variation.input);
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
  const input = h("input", { type: "file", name: "record-file", accept: ".json,.pb,.bin", "aria-label": "A record file" }) as HTMLInputElement;
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
    // What the table waits for (QuickMatchResponse.wait): its page counts the house bots' wait.
    const fillIn = matched.wait?.houseBotsIn;
    if (fillIn) sessionStorage.setItem(fillKey(seat.tableId), String(Date.now() + Number(fillIn.seconds) * 1000));
    location.hash = `#/play/${encodeURIComponent(seat.tableId)}`;
  } catch (error) {
    message.textContent = `Quick match failed: ${describe(error)}`;
  }
}
