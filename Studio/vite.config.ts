import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

// `npm run dev` serves the Studio with hot reload and proxies the API to a running server
// (RAVENLITE_URL, default http://127.0.0.1:8080); `npm run build` writes dist/, which the server serves at /studio/.
const server = process.env.RAVENLITE_URL ?? 'http://127.0.0.1:8080';
const api = ['/databases', '/admin', '/build', '/cluster', '/topology', '/operations', '/studio-api'];

export default defineConfig({
  base: '/studio/',
  plugins: [preact()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    host: '127.0.0.1',
    proxy: Object.fromEntries(api.map((p) => [p, { target: server, changeOrigin: false }])),
  },
});
