const users = { 1: 'Ada', 2: 'Grace' };

export function getUsr(id) {
  return users[id];
}
