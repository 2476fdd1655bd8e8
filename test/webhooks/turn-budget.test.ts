import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TurnBudget } from '../../src/webhooks/turn-budget.js';

test('a turn grants at most its budget across callers; whoever got less is called in the next turn, when the budget is whole again', async () => {
  const budget = new TurnBudget(3);
  const woken: string[] = [];
  assert.equal(budget.grant(2, () => woken.push('a')), 2);
  assert.equal(budget.grant(2, () => woken.push('b')), 1, 'one left of three');
  assert.equal(budget.grant(1, () => woken.push('c')), 0);
  assert.equal(woken.length, 0, 'nobody is woken within the turn');
  await nextTurn();
  assert.deepEqual([...woken], ['b', 'c'], 'only those held back are woken, in order');
  assert.equal(budget.grant(5, () => woken.push('d')), 3, 'whole again');
});
