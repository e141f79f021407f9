// Catches a render error so the page shows what went wrong instead of going blank.
import { Component, type ErrorInfo, type ReactNode } from "react";

interface State {
  error: Error | null;
}

export class ErrorBoundary extends Component<{ children: ReactNode }, State> {
  override state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  override componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error("Gadget Code: a page failed to render", error, info.componentStack);
  }

  override render(): ReactNode {
    if (!this.state.error) return this.props.children;
    return (
      <div className="page">
        <div className="error-note" role="alert">
          <strong>This page failed to show: </strong>
          {this.state.error.message}
          <div>
            <button
              type="button"
              className="button small"
              onClick={() => this.setState({ error: null })}
            >
              Try again
            </button>{" "}
            <a href="/">Back to projects</a>
          </div>
        </div>
      </div>
    );
  }
}
