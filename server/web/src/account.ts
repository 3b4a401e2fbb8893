// Your account in the browser (#/account): sign up or sign in with a password, then your
// sessions (when and from where each was last used; each revocable; signing out revokes this
// one) and the bot accounts you own (make one and copy its key, shown once). The session's
// token is kept in this browser's localStorage and sent as `authorization: Bearer` on the calls
// that need it; it is never put in the address or shown on the page.

import {
  type Account,
  type Session,
  type SpadesClients,
  Code,
  ConnectError,
  create,
  SignInRequestSchema,
  SignUpRequestSchema,
  CreateBotRequestSchema,
  refusalOf,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";

/** Where this browser keeps the signed-in session's token. */
export const SESSION_KEY = "spades-session-token";

export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** The reason code of a refusal (ErrorInfo.reason), shown beside the words a person reads. */
export function refusal(error: unknown): string {
  if (error instanceof ConnectError && error.code !== Code.Unavailable) {
    const code = refusalOf(error).reasonCode;
    return code ? `${describe(error)} (${code})` : describe(error);
  }
  return describe(error);
}

function when(timestamp: { seconds: bigint } | undefined): string {
  if (!timestamp) return "";
  return new Date(Number(timestamp.seconds) * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

function passwordInput(name: string, label: string): [HTMLElement, HTMLInputElement] {
  const input = h("input", { type: "password", name, minlength: "8", maxlength: "256", required: true, autocomplete: name === "new-password" || name === "confirm-password" ? "new-password" : "current-password" }) as HTMLInputElement;
  return [h("label", {}, label, " ", input), input];
}

function nameInput(name: string): [HTMLElement, HTMLInputElement] {
  const input = h("input", { name, maxlength: "32", required: true, autocomplete: "username" }) as HTMLInputElement;
  return [h("label", {}, "Name ", input), input];
}

function signedOutView(root: HTMLElement, clients: SpadesClients): void {
  const message = h("p", { class: "message", role: "status" });
  const [inName, inNameInput] = nameInput("sign-in-name");
  const [inPassword, inPasswordInput] = passwordInput("current-password", "Password");
  const signIn = h("form", { class: "sign-in", "aria-label": "Sign in" },
    h("h2", {}, "Sign in"), inName, inPassword, h("button", { type: "submit" }, "Sign in"));
  const [upName, upNameInput] = nameInput("sign-up-name");
  const [upPassword, upPasswordInput] = passwordInput("new-password", "Password (8 or more characters)");
  const [upConfirm, upConfirmInput] = passwordInput("confirm-password", "Password again");
  const signUp = h("form", { class: "sign-up", "aria-label": "Sign up" },
    h("h2", {}, "Sign up"), upName, upPassword, upConfirm, h("button", { type: "submit" }, "Sign up"));
  const done = (token: string): void => {
    localStorage.setItem(SESSION_KEY, token);
    accountPage(root, clients);
  };
  signIn.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const answer = await clients.account.signIn(create(SignInRequestSchema, { name: inNameInput.value.trim(), password: inPasswordInput.value }));
        done(answer.sessionToken);
      } catch (error) {
        message.className = "message error";
        message.textContent = `Could not sign in: ${refusal(error)}`;
      }
    })();
  });
  signUp.addEventListener("submit", (event) => {
    event.preventDefault();
    if (upPasswordInput.value !== upConfirmInput.value) {
      message.className = "message error";
      message.textContent = "The two passwords differ.";
      return;
    }
    void (async () => {
      try {
        const answer = await clients.account.signUp(create(SignUpRequestSchema, { name: upNameInput.value.trim(), password: upPasswordInput.value }));
        done(answer.sessionToken);
      } catch (error) {
        message.className = "message error";
        message.textContent = `Could not sign up: ${refusal(error)}`;
      }
    })();
  });
  replace(root, h("section", { class: "account signed-out" },
    h("h1", {}, "Your account"),
    h("p", { class: "explain" }, "People sign in with a password; a session lasts until it expires or you sign out. ",
      "Bots use an account key, which you make here once signed in."),
    message, h("div", { class: "account-forms" }, signIn, signUp)));
}

function sessionRow(clients: SpadesClients, token: string, session: Session, refresh: () => void, message: HTMLElement): HTMLElement {
  const revoke = h("button", { type: "button", name: "revoke-session", "data-session-id": session.sessionId }, session.current ? "Sign out" : "Revoke");
  revoke.addEventListener("click", () => void (async () => {
    try {
      await clients.account.revokeSession({ sessionId: session.sessionId }, bearer(token));
      if (session.current) localStorage.removeItem(SESSION_KEY);
      refresh();
    } catch (error) {
      message.textContent = `Could not revoke the session: ${refusal(error)}`;
    }
  })());
  return h("tr", { class: session.current ? "session current" : "session" },
    h("td", {}, session.sessionId, session.current ? h("span", { class: "badge" }, "this browser") : null),
    h("td", {}, when(session.createTime)), h("td", {}, when(session.expireTime)),
    h("td", { class: "last-used" }, when(session.lastUseTime)), h("td", {}, session.lastAddress), h("td", {}, revoke));
}

function botRow(bot: Account): HTMLElement {
  return h("tr", { class: "bot" }, h("td", {}, bot.name), h("td", {}, bot.accountId), h("td", {}, bot.keyRevoked ? "revoked" : "works"));
}

async function signedInView(root: HTMLElement, clients: SpadesClients, token: string): Promise<void> {
  const message = h("p", { class: "message", role: "status" });
  const refresh = (): void => accountPage(root, clients);
  let sessions: Session[];
  try {
    sessions = (await clients.account.listSessions({}, bearer(token))).sessions;
  } catch (error) {
    // A session that expired or was revoked elsewhere: forget it and offer to sign in again.
    localStorage.removeItem(SESSION_KEY);
    signedOutView(root, clients);
    const shown = root.querySelector(".message") as HTMLElement;
    shown.className = "message error";
    shown.textContent = `Signed out: ${refusal(error)}`;
    return;
  }
  const bots = h("tbody");
  const showBots = async (): Promise<void> => {
    try {
      const listed = (await clients.account.listBots({}, bearer(token))).bots;
      replace(bots, ...(listed.length ? listed.map(botRow) : [h("tr", {}, h("td", { colspan: "3" }, "No bots yet."))]));
    } catch (error) {
      replace(bots, h("tr", {}, h("td", { colspan: "3" }, `Could not list your bots: ${refusal(error)}`)));
    }
  };
  const botName = h("input", { name: "bot-name", maxlength: "32", required: true }) as HTMLInputElement;
  const key = h("output", { class: "bot-key", name: "bot-key" });
  const makeBot = h("form", { class: "create-bot", "aria-label": "Create a bot" },
    h("label", {}, "Bot name ", botName), h("button", { type: "submit" }, "Create bot"), key);
  makeBot.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const made = await clients.account.createBot(create(CreateBotRequestSchema, { name: botName.value.trim(), requestId: crypto.randomUUID() }), bearer(token));
        replace(key, h("p", {}, `Key of ${made.account?.name ?? "the bot"}, shown once: copy it now (SPADES_ACCOUNT_KEY for spades bot)`),
          h("code", { class: "key" }, made.key));
        await showBots();
      } catch (error) {
        replace(key, h("p", { class: "message error" }, `Could not create the bot: ${refusal(error)}`));
      }
    })();
  });
  const current = sessions.find((session) => session.current);
  const signOut = h("button", { type: "button", name: "sign-out" }, "Sign out");
  signOut.addEventListener("click", () => void (async () => {
    try {
      await clients.account.revokeSession({}, bearer(token));
    } catch {
      // Already ended: forgetting it is all that is left to do.
    }
    localStorage.removeItem(SESSION_KEY);
    refresh();
  })());
  replace(root, h("section", { class: "account signed-in" },
    h("h1", {}, "Your account"),
    h("p", { class: "signed-in-as" }, "Signed in", current ? ` (session ${current.sessionId}, until ${when(current.expireTime)})` : "", " ", signOut),
    message,
    h("h2", {}, "Sessions"),
    h("table", { class: "sessions" },
      h("thead", {}, h("tr", {}, ...["Session", "Since", "Until", "Last used", "From", ""].map((label) => h("th", {}, label)))),
      h("tbody", {}, ...sessions.map((session) => sessionRow(clients, token, session, refresh, message)))),
    h("h2", {}, "Your bots"),
    h("table", { class: "bots" },
      h("thead", {}, h("tr", {}, ...["Name", "Account id", "Key"].map((label) => h("th", {}, label)))), bots),
    makeBot));
  await showBots();
}

export function accountPage(root: HTMLElement, clients: SpadesClients): void {
  const token = localStorage.getItem(SESSION_KEY);
  if (!token) {
    signedOutView(root, clients);
    return;
  }
  void signedInView(root, clients, token);
}
