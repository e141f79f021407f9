// Light, dark or the system's choice, kept in localStorage and applied as data-theme on <html>.
import { useEffect, useState } from "react";

export type ThemeChoice = "system" | "light" | "dark";
const THEME_KEY = "gadget.theme";

function readTheme(): ThemeChoice {
  try {
    const stored = localStorage.getItem(THEME_KEY);
    return stored === "light" || stored === "dark" ? stored : "system";
  } catch {
    return "system";
  }
}

/** The chosen theme and a setter; "system" follows prefers-color-scheme through CSS. */
export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [theme, setTheme] = useState<ThemeChoice>(readTheme);
  useEffect(() => {
    const root = document.documentElement;
    if (theme === "system") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", theme);
    try {
      if (theme === "system") localStorage.removeItem(THEME_KEY);
      else localStorage.setItem(THEME_KEY, theme);
    } catch {
      // The choice lasts for this tab only.
    }
  }, [theme]);
  return [theme, setTheme];
}

/** Whether the page currently shows dark colours (for the editor's theme). */
export function isDarkTheme(): boolean {
  const attribute = document.documentElement.getAttribute("data-theme");
  if (attribute) return attribute === "dark";
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
}
