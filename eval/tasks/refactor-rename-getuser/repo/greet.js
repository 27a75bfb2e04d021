import { getUsr } from './users.js';

export function greetUser(id) {
  return `Hello, ${getUsr(id)}!`;
}
