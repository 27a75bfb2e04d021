export function toCelsius(fahrenheit) {
  return ((fahrenheit - 32) * 5) / 9;
}
