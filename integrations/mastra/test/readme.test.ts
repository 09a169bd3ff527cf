import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_APP_NAME, PROCESSOR_DEFAULTS, TOOL_DEFAULTS } from "../src/options.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** `option -> default cell` for the table under the `### <heading>` section. */
function table(heading: string): Map<string, string> {
  const section = readme.split(`### ${heading}`)[1]!.split("\n### ")[0]!.split("\n## ")[0]!;
  const rows = new Map<string, string>();
  for (const match of section.matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)) rows.set(match[1]!, match[2]!.trim());
  return rows;
}

const shown = (value: string | number) => (typeof value === "string" ? `\`"${value}"\`` : `\`${value}\``);

describe("README option tables", () => {
  it("state the processor's defaults", () => {
    const rows = new Map([...table("Recall (before the model call)"), ...table("Persistence (after the run)")]);
    for (const [option, value] of Object.entries(PROCESSOR_DEFAULTS)) expect([option, rows.get(option)]).toEqual([option, shown(value)]);
  });

  it("state the tools' defaults", () => {
    const rows = table("Tools");
    for (const [option, value] of Object.entries(TOOL_DEFAULTS)) expect([option, rows.get(option)]).toEqual([option, shown(value)]);
  });

  it("state the app name", () => {
    expect(table("Connection and identity").get("appName")).toBe(shown(DEFAULT_APP_NAME));
  });
});
