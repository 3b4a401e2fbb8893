// Builds the web client into dist/, which spades-server serves on its web port.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true },
});
