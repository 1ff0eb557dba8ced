// Builds the single-page app into ../static (served by bzrk.ui.app); Monaco's AMD files are
// copied next to it by scripts/copy-monaco.mjs (monaco-kusto's worker runs from those).
// `BZRK_GATEWAY=http://127.0.0.1:9500 npm run dev` serves the sources with hot reload and sends
// API calls (and the built Monaco files, after one `make ui`) to that gateway.
import { defineConfig } from 'vite';

const gateway = process.env.BZRK_GATEWAY;

export default defineConfig({
  base: '/',
  build: {
    outDir: '../static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    sourcemap: false,
  },
  server: gateway
    ? { proxy: Object.fromEntries(['/auth', '/api', '/query', '/monaco'].map((p) => [p, { target: gateway, changeOrigin: false }])) }
    : undefined,
});
