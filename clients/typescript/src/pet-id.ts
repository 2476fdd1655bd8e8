const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A number above 2^53 is already rounded (…993 is …992), so anything but an int64 bigint is refused before it names the wrong pet. */
export function checkPetId(petId: bigint): bigint {
  if (typeof petId !== 'bigint') {
    throw new TypeError(`petId must be a bigint (e.g. 9007199254740993n), got ${typeof petId} ${String(petId)}`);
  }
  if (petId < INT64_MIN || petId > INT64_MAX) throw new RangeError(`petId ${petId} is outside the int64 range`);
  return petId;
}
