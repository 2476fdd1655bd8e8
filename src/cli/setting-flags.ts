import { CONFIG_VARIABLES, SETTINGS, type ConfigVariable } from '../config.js';
import { defaultText } from '../config/docs.js';
import type { Setting } from '../config/setting.js';

type Settings = typeof SETTINGS;
/** The flag names `serve` takes for settings: `port` for --port, and so on. */
type FlagName = { [V in keyof Settings]: Settings[V] extends { flag: { name: infer N extends string } } ? N : never }[keyof Settings];

/** Every row of SETTINGS with a flag, in the table's order. */
const FLAGGED = Object.entries(SETTINGS).flatMap(([variable, setting]: [string, Setting]) =>
  setting.flag ? [{ variable, setting, flag: setting.flag }] : [],
);

/** The parseArgs options for the settings' flags: each takes a value. */
export const SETTING_FLAG_OPTIONS = Object.fromEntries(FLAGGED.map(({ flag }) => [flag.name, { type: 'string' }])) as {
  readonly [N in FlagName]: { readonly type: 'string' };
};

/** loadConfig's overrides from the parsed flags: each flag given stands for its variable (WORKERS, read apart, is left out). */
export function settingOverrides(values: Partial<Record<FlagName, string>>): Partial<Record<ConfigVariable, string>> {
  const overrides: Partial<Record<ConfigVariable, string>> = {};
  for (const { variable, flag } of FLAGGED) {
    const value = values[flag.name as FlagName];
    if (value !== undefined && Object.hasOwn(CONFIG_VARIABLES, variable)) overrides[variable as ConfigVariable] = value;
  }
  return overrides;
}

/** Width of the option column of `serve --help`, as the other commands' help has it. */
const OPTION_WIDTH = 21;
/** Width a description wraps at, the indent and option column included. */
const LINE_WIDTH = 100;

/** Joins words that a help line never breaks between. */
const UNBROKEN = '\u00a0';

/** One option of a help text: the option, then its description wrapped under itself. */
export function helpOption(option: string, description: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of description.split(' ').map((w) => w.replaceAll(UNBROKEN, ' '))) {
    if (line !== '' && 2 + OPTION_WIDTH + line.length + 1 + word.length > LINE_WIDTH) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines.map((text, i) => `  ${(i === 0 ? option : '').padEnd(OPTION_WIDTH)}${text}`.trimEnd()).join('\n');
}

/** The help lines of the settings' flags: flag, variable, doc, what it accepts and its default. */
export function settingFlagsHelp(): string {
  return FLAGGED.map(({ variable, setting, flag }) =>
    helpOption(
      `--${flag.name} ${flag.placeholder}`,
      `${variable}: ${setting.doc.replaceAll('`', '')}; ${setting.value.accepts} (default${UNBROKEN}${defaultText(setting.value.defaultText ?? setting.value.default)})`,
    ),
  ).join('\n');
}
