// The web client's entry: a hash router between the lobby and a table.

import { connectTo } from "@spades/client";
import { lobbyPage, seatKey } from "./lobby.js";
import { recordPage } from "./record.js";
import { tablePage } from "./table.js";
import "./style.css";

const clients = connectTo(window.location.origin);
const root = document.getElementById("app") as HTMLElement;
const connection = document.getElementById("connection") as HTMLElement;
let leaving = new AbortController();

function route(): void {
  leaving.abort();
  leaving = new AbortController();
  connection.textContent = "";
  const table = /^#\/(table|play|record)\/(.+)$/.exec(window.location.hash);
  if (table?.[1] === "record" && table[2]) {
    recordPage(root, clients, decodeURIComponent(table[2]), leaving.signal);
  } else if (table?.[2]) {
    const tableId = decodeURIComponent(table[2]);
    // A seat's token stays in this tab only (sessionStorage): it is the seat's credential.
    const token = table[1] === "play" ? sessionStorage.getItem(seatKey(tableId)) ?? undefined : undefined;
    tablePage(root, clients, tableId, leaving.signal, connection, token);
  } else {
    lobbyPage(root, clients, leaving.signal);
  }
}

window.addEventListener("hashchange", route);
route();
