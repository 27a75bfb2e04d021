/** Whether `year` has a 29 February in the Gregorian calendar. */
export function isLeapYear(year) {
  return year > 0;
}
