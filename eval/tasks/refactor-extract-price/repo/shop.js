export function receiptLine(name, cents) {
  return `${name}: $${(cents / 100).toFixed(2)}`;
}

export function cartTotal(items) {
  const cents = items.reduce((sum, item) => sum + item.cents, 0);
  return `Total: $${(cents / 100).toFixed(2)}`;
}
