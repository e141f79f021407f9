// The web IDE's shell: login gate, top bar, connection banner and the routes of every page.
import { type ReactNode, Suspense, useCallback, useEffect, useState } from "react";
import { Link, Redirect, Route, Switch, useLocation } from "wouter";
import { ConnectionBanner } from "../components/connection-banner.tsx";
import { useLiveCache } from "../data/live-cache.ts";
import { summaryLabel } from "../live/turn-summary.ts";
import { AccountPage } from "../pages/account-page.tsx";
import { ActivityPage } from "../pages/activity-page.tsx";
import { AuthPage } from "../pages/auth-page.tsx";
import { DronesPage } from "../pages/drones-page.tsx";
import { ProjectPage } from "../pages/project-page.tsx";
import { ProjectsPage } from "../pages/projects-page.tsx";
import { ProvidersPage } from "../pages/providers-page.tsx";
import { SessionPage } from "../pages/session-page.tsx";
import { WebhooksPage } from "../pages/webhooks-page.tsx";
import { AuthProvider, LOGIN_ENDED, useAuth } from "./auth.tsx";
import { ErrorBoundary } from "./error-boundary.tsx";
import { LiveProvider, useConnectionState } from "./live.tsx";
import { QueryProvider } from "./query-client.tsx";
import { type ThemeChoice, useTheme } from "./theme.ts";
import { TurnSummaryProvider, useTurnSummary } from "./turn-summary.tsx";

function NavLink({ href, title, children }: { href: string; title?: string; children: ReactNode }) {
  const [location] = useLocation();
  const active = location === href || (href !== "/" && location.startsWith(`${href}/`));
  return (
    <Link href={href} title={title} className={active ? "nav-link active" : "nav-link"}>
      {children}
    </Link>
  );
}

const nextTheme: Record<ThemeChoice, ThemeChoice> = {
  system: "dark",
  dark: "light",
  light: "system",
};

/** "2 running · 1 needs you", linking to Activity; nothing while no turn is live. */
function TurnCounts() {
  const summary = useTurnSummary();
  const label = summaryLabel(summary);
  if (!label) return null;
  return (
    <Link
      href="/"
      className={summary.awaitingApproval > 0 ? "turn-counts needs-you" : "turn-counts"}
      aria-label={`Your turns: ${label}`}
    >
      {label}
    </Link>
  );
}

/**
 * The top bar. On a narrow screen its links and buttons fold into a menu opened by one button
 * (as many links as there are, one per line); on a wide one they sit in the bar and wrap. The
 * turn counts stay in the bar: they are what a phone user looks for.
 */
function TopBar() {
  const { user, signOut } = useAuth();
  const [theme, setTheme] = useTheme();
  const [location] = useLocation();
  const [open, setOpen] = useState(false);
  // Going somewhere closes the menu; so does Escape.
  const [openedAt, setOpenedAt] = useState(location);
  if (open && openedAt !== location) {
    setOpen(false);
    setOpenedAt(location);
  }
  useEffect(() => {
    if (!open) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open]);
  return (
    <header className={open ? "top-bar menu-open" : "top-bar"}>
      <Link href="/" className="brand">
        <span className="brand-mark" aria-hidden="true" />
        Gadget Code
      </Link>
      <TurnCounts />
      <button
        type="button"
        className="button ghost small menu-button"
        aria-expanded={open}
        aria-controls="top-bar-menu"
        onClick={() => {
          setOpenedAt(location);
          setOpen((current) => !current);
        }}
      >
        <span className="menu-icon" aria-hidden="true" />
        Menu
      </button>
      <div id="top-bar-menu" className="top-bar-menu">
        <nav>
          <NavLink href="/">Activity</NavLink>
          <NavLink href="/projects">Projects</NavLink>
          <NavLink href="/drones">Drones</NavLink>
          <NavLink href="/providers">Providers</NavLink>
          <NavLink href="/webhooks" title="Be told when your turns finish, fail or need you">
            Webhooks
          </NavLink>
        </nav>
        <span className="spacer" />
        <button
          type="button"
          className="button ghost small"
          onClick={() => setTheme(nextTheme[theme])}
          title="Switch between system, dark and light colours"
        >
          Theme: {theme}
        </button>
        <NavLink href="/account" title="Your account and where you are logged in">
          {user?.name || user?.email || "Account"}
        </NavLink>
        <button type="button" className="button ghost small" onClick={() => signOut()}>
          Log out
        </button>
      </div>
    </header>
  );
}

function SignedIn() {
  useLiveCache();
  const state = useConnectionState();
  const [, navigate] = useLocation();
  const openActivity = useCallback(() => navigate("/"), [navigate]);
  return (
    <TurnSummaryProvider onOpenActivity={openActivity}>
      <Shell state={state} />
    </TurnSummaryProvider>
  );
}

/** The first Tab stop: past the top bar to the page, or on a session page to its prompt box. */
function SkipLink() {
  const [location] = useLocation();
  const session = /^\/projects\/[^/]+\/sessions\//.test(location);
  return (
    <a className="skip-link" href={session ? "#prompt" : "#content"}>
      {session ? "Skip to the prompt" : "Skip to the page"}
    </a>
  );
}

function Shell({ state }: { state: ReturnType<typeof useConnectionState> }) {
  return (
    <div className="shell">
      <SkipLink />
      <div className="sticky-head">
        <TopBar />
        <ConnectionBanner state={state} />
      </div>
      <main id="content" tabIndex={-1}>
        <ErrorBoundary>
          <Suspense fallback={<p className="page muted">Loading…</p>}>
            <Switch>
              <Route path="/" component={ActivityPage} />
              <Route path="/activity">
                <Redirect to="/" />
              </Route>
              <Route path="/login">
                <Redirect to="/" />
              </Route>
              <Route path="/signup">
                <Redirect to="/" />
              </Route>
              <Route path="/projects" component={ProjectsPage} />
              <Route path="/projects/:projectId/sessions/:sessionId">
                {(params) => (
                  <SessionPage projectId={params.projectId} sessionId={params.sessionId} />
                )}
              </Route>
              <Route path="/projects/:projectId">
                {(params) => <ProjectPage projectId={params.projectId} />}
              </Route>
              <Route path="/drones" component={DronesPage} />
              <Route path="/providers" component={ProvidersPage} />
              <Route path="/account" component={AccountPage} />
              <Route path="/webhooks" component={WebhooksPage} />
              <Route>
                <div className="page">
                  <h1>Not found</h1>
                  <p>
                    Nothing lives at this address. <Link href="/projects">Go to your projects</Link>
                    .
                  </p>
                </div>
              </Route>
            </Switch>
          </Suspense>
        </ErrorBoundary>
      </main>
    </div>
  );
}

function Gate() {
  const { token, forget, api } = useAuth();
  const [location] = useLocation();
  if (!token) {
    return (
      <Switch>
        <Route path="/login">
          <AuthPage mode="login" />
        </Route>
        <Route path="/signup">
          <AuthPage mode="signup" />
        </Route>
        <Route>
          <Redirect
            to={`/login${location && location !== "/" ? `?next=${encodeURIComponent(location)}` : ""}`}
          />
        </Route>
      </Switch>
    );
  }
  return (
    <LiveProvider token={token} baseUrl={api.baseUrl} onUnauthorized={() => forget(LOGIN_ENDED)}>
      <SignedIn />
    </LiveProvider>
  );
}

/**
 * A query cache per login, made anew when the login changes: keys do not name the user, so
 * nothing one login read may be shown to the next.
 */
function QueriesOfThisLogin({ children }: { children: ReactNode }) {
  const { token } = useAuth();
  return <QueryProvider key={token ?? ""}>{children}</QueryProvider>;
}

/** The whole app. `baseUrl` points REST and the socket at another origin (tests, benches). */
export function App({ baseUrl = "" }: { baseUrl?: string }) {
  return (
    <ErrorBoundary>
      <AuthProvider baseUrl={baseUrl}>
        <QueriesOfThisLogin>
          <Gate />
        </QueriesOfThisLogin>
      </AuthProvider>
    </ErrorBoundary>
  );
}
