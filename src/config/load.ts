import type { SettingData, SettingValue } from './setting.js';
import { SETTINGS } from './settings.js';

type Settings = typeof SETTINGS;

/** Every variable loadConfig reads: the rows of SETTINGS that fill a member of Config. */
export type ConfigVariable = { [V in keyof Settings]: Settings[V] extends { key: string } ? V : never }[keyof Settings];

/** Everything the service reads from its environment, validated once at start: one member per row of SETTINGS. */
export type Config = {
  -readonly [V in ConfigVariable as Settings[V]['key']]: Settings[V]['value'] extends SettingValue<infer T> ? T : never;
};

/** Each variable loadConfig reads, and the Config member it fills. */
export const CONFIG_VARIABLES = Object.fromEntries(
  Object.entries(SETTINGS).flatMap(([variable, setting]) => ('key' in setting ? [[variable, setting.key]] : [])),
) as { readonly [V in ConfigVariable]: Settings[V]['key'] };

/**
 * Builds the config from environment variables, with `overrides` (command-line flags, keyed by
 * variable name) taking precedence. Throws ConfigError naming the first bad setting.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: Partial<Record<ConfigVariable, string>> = {},
): Config {
  const config: Record<string, unknown> = {};
  for (const [variable, key] of Object.entries(CONFIG_VARIABLES)) {
    const name = variable as ConfigVariable;
    config[key] = readSetting(name, (overrides[name] ?? env[name])?.trim(), SETTINGS[name].value as SettingValue<SettingData>);
  }
  return config as Config;
}

/** The value of a setting's text: its default when unset or blank, else what `value` makes of it (or a ConfigError naming `name`). */
export function readSetting<T extends SettingData>(name: string, text: string | undefined, value: SettingValue<T>): T {
  return text === undefined || text.trim() === '' ? value.default : value.parse(name, text);
}
