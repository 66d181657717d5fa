//! tsc on code that uses Node's own modules, whose types (`@types/node`) a checkout does not
//! have: a class extending `EventEmitter` keeps its members, and a module of the project that
//! is not there is still a bug.

use bugloop_testkit::TestRepo;

#[tokio::test]
async fn a_class_extending_a_node_module_has_its_members_and_a_lost_module_is_still_said() {
    let repo = TestRepo::with_files(&[("src/a.ts", "export const a = 1;\n")]);
    repo.branch("change");
    for (name, module) in [("worker.ts", "node:events"), ("emitter.ts", "events")] {
        repo.write(
            &format!("src/{name}"),
            &format!(
                "import {{ EventEmitter }} from \"{module}\";\nimport {{ readFile }} from \"fs/promises\";\n\n\
                 export class Worker extends EventEmitter {{\n  start(): void {{\n    this.emit(\"start\");\n    void readFile(\"x\");\n  }}\n}}\n"
            ),
        );
    }
    repo.write(
        "src/lost.ts",
        "import { helper } from \"./helpr\";\n\nexport const h = helper;\n",
    );
    repo.commit("workers");
    let analysis = super::run_built_in(&repo, "tsc").await;
    let found: Vec<(&str, &str)> = analysis
        .candidates
        .iter()
        .map(|c| (c.hit.file.as_str(), c.hit.rule.as_str()))
        .collect();
    assert_eq!(found, [("src/lost.ts", "TS2307")], "{analysis:#?}");
}
