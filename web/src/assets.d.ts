/** Stylesheets are bundled by esbuild; importing one only includes it. */
declare module '*.css';
