// Builds the single-page app into ../static (served by bzrk.ui.app); Monaco's AMD files are
// copied next to it by scripts/copy-monaco.mjs (monaco-kusto's worker runs from those).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/',
  build: {
    outDir: '../static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    sourcemap: false,
  },
});
