// A benchmark's body of a given size: the shape an attacker picks, as much of it as fits.

/** `make(n)` for the largest n whose text is `size` characters at most (`make` grows with n). */
export function sized(size, make) {
  let [low, high] = [0, size]
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (make(mid).length <= size) low = mid
    else high = mid - 1
  }
  return make(low)
}
