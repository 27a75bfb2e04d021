/** A URL-safe slug: lowercase words joined by single dashes. */
export function slugify(title) {
  return title.trim().toLowerCase().replace(/ /g, '-');
}
