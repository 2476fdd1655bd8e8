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

test('while the API is busy, sends also wait for the rate: granted as it refills, the held back woken by a timer once one may start', async () => {
  let busy = true;
  // A turn's bound far above the bucket's refill between two lines: only the rate holds sends back here.
  const budget = new TurnBudget(100, { busy: () => busy, perSecondWhenBusy: 1000 });
  assert.equal(budget.grant(100, () => assert.fail('granted in full')), 100, 'a full bucket to begin with');
  // The budget's timer does not keep a process alive: this one does, for the test.
  const alive = setInterval(() => undefined, 1000);
  // The next turn: the turn's bound is whole again, the rate's bucket is not.
  await new Promise((resolve) => setImmediate(resolve));
  // Whatever refilled meanwhile is taken, until the bucket holds back a send; that one is woken by the rate's timer.
  await new Promise<void>((resolve) => {
    while (budget.grant(1, resolve) === 1);
  });
  // Woken in the next turn or by the rate's timer: it asks again until a token is there, as a worker does.
  while (budget.grant(1, () => undefined) === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  clearInterval(alive);
  busy = false;
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(budget.grant(100, () => undefined) > 1, 'not busy: only the turn bounds it');
});
