/** Shipping in cents for an order of `cents`, to `country`. */
export function shipping(cents, country) {
  let cost;
  if (country === 'US') {
    if (cents >= 5000) {
      cost = 0;
    } else {
      cost = 500;
    }
  } else {
    if (cents >= 10000) {
      cost = 1000;
    } else {
      cost = 2000;
    }
  }
  return cost;
}
