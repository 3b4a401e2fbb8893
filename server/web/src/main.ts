// The web client's entry: a hash router between the lobby, a table, a record, a pool's
// leaderboard, a player's page, the tournaments and a tournament's page, your account, an
// account's games (#/games: yours), the bots online now and a challenge (online.ts).

import { connectTo, isPool } from "@spades/client";
import { accountPage } from "./account.js";
import { gamesPageView, playerGames } from "./games.js";
import { lobbyPage, seatKey } from "./lobby.js";
import { accountSeat, challengePage, onlinePage } from "./online.js";
import { leaderboardPage, playerPage } from "./ratings.js";
import { recordPage } from "./record.js";
import { tablePage } from "./table.js";
import { tournamentPage, tournamentsListPage } from "./tournaments.js";
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
  const board = /^#\/leaderboard(?:\/([^?]*))?(?:\?page-size=(\d+))?$/.exec(window.location.hash);
  const player = /^#\/player\/(by-name\/)?(.+)$/.exec(window.location.hash);
  const tournament = /^#\/tournament\/(.+)$/.exec(window.location.hash);
  const games = /^#\/games(?:\/(.+))?$/.exec(window.location.hash);
  const challenge = /^#\/challenge\/(.+)$/.exec(window.location.hash);
  const accountSeatRoute = /^#\/seat\/([^/]+)\/([a-z]+)$/.exec(window.location.hash);
  if (window.location.hash === "#/account") {
    accountPage(root, clients);
  } else if (games) {
    gamesPageView(root, clients, decodeURIComponent(games[1] ?? ""));
  } else if (window.location.hash === "#/online") {
    onlinePage(root, clients, leaving.signal);
  } else if (challenge?.[1]) {
    challengePage(root, clients, decodeURIComponent(challenge[1]), leaving.signal);
  } else if (accountSeatRoute?.[1] && accountSeatRoute[2]) {
    // A seat the signed-in person's account holds (a challenge's table), played by its session.
    const tableId = decodeURIComponent(accountSeatRoute[1]);
    tablePage(root, clients, tableId, leaving.signal, connection, accountSeat(tableId, accountSeatRoute[2]));
  } else if (window.location.hash === "#/tournaments") {
    tournamentsListPage(root, clients);
  } else if (tournament?.[1]) {
    tournamentPage(root, clients, decodeURIComponent(tournament[1]), leaving.signal);
  } else if (board) {
    const pool = decodeURIComponent(board[1] ?? "");
    leaderboardPage(root, clients, isPool(pool) ? pool : "partnership", board[2] ? Number(board[2]) : undefined);
  } else if (player?.[2]) {
    const which = decodeURIComponent(player[2]);
    playerPage(root, clients, player[1] ? { name: which } : { accountId: which }, (account) => playerGames(clients, account));
  } else if (table?.[1] === "record" && table[2]) {
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
