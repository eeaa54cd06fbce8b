// vite empties ../webapp/dist; gate-console/webapp keeps a .gitkeep there.
import { writeFileSync } from "node:fs";
writeFileSync(new URL("../../webapp/dist/.gitkeep", import.meta.url), "");
