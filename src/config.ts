// The settings, from their one table in config/settings.ts; importers use this path.
export { ConfigError } from './config/error.js';
export { CONFIG_VARIABLES, loadConfig, readSetting, type Config, type ConfigVariable } from './config/load.js';
export { DEFAULT_DATABASE_URL, LOG_LEVELS, SETTINGS, type LogLevel } from './config/settings.js';
