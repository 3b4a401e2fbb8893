// The web client's entry: a hash router between the lobby and a table.

import { connectTo } from "@spades/client";
import { lobbyPage } from "./lobby.js";
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
  const table = /^#\/table\/(.+)$/.exec(window.location.hash);
  if (table?.[1]) {
    tablePage(root, clients, decodeURIComponent(table[1]), leaving.signal, connection);
  } else {
    lobbyPage(root, clients, leaving.signal);
  }
}

window.addEventListener("hashchange", route);
route();
