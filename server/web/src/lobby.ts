// The lobby: every table live (status, seats, badges, scores), and a form to open a table
// and fill it with house bots to watch.

import {
  Code,
  ConnectError,
  HouseBotKind,
  type SpadesClients,
  type Table,
  TableStatus,
  defaultRules,
  seatName,
} from "@spades/client";
import { h, replace } from "./dom.js";

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
  const form = h(
    "form",
    { class: "create" },
    h("h2", {}, "Open a table"),
    h("label", {}, "Name ", name),
    h("label", {}, "Target score ", target),
    h("label", {}, "Hands at most (0: no cap) ", hands),
    h("label", {}, "House bots to seat ", houseBots),
    h("button", { type: "submit" }, "Open the table"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void openTable(clients, name.value, Number(target.value), Number(hands.value), Number(houseBots.value), message);
  });
  replace(
    root,
    h("section", { class: "lobby" },
      h("h1", {}, "Tables"),
      h("table", { class: "tables" },
        h("thead", {}, h("tr", {}, ...["Table", "Status", "Seats", "Rules", "Score", "Hand", ""].map((title) => h("th", {}, title)))),
        list,
      ),
    ),
    form,
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
    h("span", { class: seat.occupied ? "seat taken" : "seat free" },
      `${seatName(seat.seat)}: ${seat.occupied ? seat.playerName + (seat.bot ? " (bot)" : "") : "free"}`),
  );
  return h(
    "tr",
    { "data-table-id": table.tableId },
    h("td", {}, table.name),
    h("td", { class: "status" }, STATUS_LABELS[table.status] ?? "?"),
    h("td", { class: "seats" }, ...seats),
    h("td", {}, ...table.badges.map((badge) => h("span", { class: "badge" }, badge))),
    h("td", {}, table.scores.join(" – ")),
    h("td", {}, table.handNumber ? String(table.handNumber) : ""),
    h("td", {}, h("a", { href: `#/table/${encodeURIComponent(table.tableId)}`, class: "watch" }, "Watch")),
  );
}

async function openTable(
  clients: SpadesClients,
  name: string,
  target: number,
  hands: number,
  houseBots: number,
  message: HTMLElement,
): Promise<void> {
  try {
    const created = await clients.lobby.createTable({
      name,
      rules: defaultRules({ targetScore: target, maxHands: hands }),
    });
    const tableId = created.table?.tableId ?? "";
    for (let index = 0; index < houseBots; index++) {
      await clients.lobby.addHouseBot({ tableId, kind: HouseBotKind.HEURISTIC });
    }
    location.hash = `#/table/${encodeURIComponent(tableId)}`;
  } catch (error) {
    message.textContent = `The table was not opened: ${describe(error)}`;
  }
}

export function describe(error: unknown): string {
  if (error instanceof ConnectError) {
    return error.code === Code.Unavailable ? "the server cannot be reached" : error.rawMessage;
  }
  return String(error);
}
