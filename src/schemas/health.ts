import { Type } from 'typebox';

export const HealthStatus = Type.Object(
  { status: Type.Union([Type.Literal('ok'), Type.Literal('ready')]) },
  { additionalProperties: false },
);
