/**
 * `lastgood completion bash|zsh|fish`: shell completion scripts made from the CLI's own commands
 * and options (commander's), so they never fall behind the CLI. Like `flux completion` and
 * `argocd completion`: commands, their options, the choices of an option (`--mode`), file names
 * where an option takes a file.
 *
 *   source <(lastgood completion bash)                       # ~/.bashrc
 *   source <(lastgood completion zsh)                        # ~/.zshrc (through bashcompinit)
 *   lastgood completion fish > ~/.config/fish/completions/lastgood.fish
 *
 * Folders where an option takes one (`install --kustomize DIR`), the choices of a command's argument
 * (`completion bash|zsh|fish`), and the target names of the config typed so far (`--target`, read by
 * the hidden `lastgood __targets --config FILE`, which prints nothing for a config it cannot read).
 */

export interface CompletionOption {
  /** --long */
  flag: string;
  description: string;
  /** takes a value */
  value: boolean;
  /** the value is a file or folder name */
  file: boolean;
  /** the value is a folder name */
  dir?: boolean;
  /** the value is a target of the config given with --config */
  target?: boolean;
  choices?: readonly string[];
}

export interface CompletionCommand {
  name: string;
  description: string;
  options: CompletionOption[];
  /** its arguments are files (`health FILE...`) */
  fileArguments: boolean;
  /** the choices of its argument (`completion bash|zsh|fish`) */
  argumentChoices?: readonly string[];
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

const quoteSingle = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function completionScript(shell: Shell, commands: CompletionCommand[]): string {
  return shell === 'fish' ? fish(commands) : shell === 'zsh' ? zsh(commands) : bash(commands);
}

function bash(commands: CompletionCommand[]): string {
  const names = commands.map((c) => c.name).join(' ');
  const dirFlags = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.dir).map((o) => o.flag)))];
  const fileFlags = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.file && !o.dir).map((o) => o.flag)))];
  const targetFlags = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.target).map((o) => o.flag)))];
  const valueFlags = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.value && !o.file && !o.dir && !o.target && !o.choices).map((o) => o.flag)))];
  const choices = new Map<string, readonly string[]>();
  for (const o of commands.flatMap((c) => c.options)) if (o.choices) choices.set(o.flag, o.choices);
  return `# lastgood completion for bash: source <(lastgood completion bash)
_lastgood() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=( $(compgen -W "${names} --help --version" -- "$cur") )
    return
  fi
  case "$prev" in
${dirFlags.length ? `    ${dirFlags.join('|')})\n      COMPREPLY=( $(compgen -d -- "$cur") ); return ;;\n` : ''}${fileFlags.length ? `    ${fileFlags.join('|')})\n      COMPREPLY=( $(compgen -f -- "$cur") ); return ;;\n` : ''}${targetFlags.length ? `    ${targetFlags.join('|')})\n      local i config=""\n      for (( i = 1; i < COMP_CWORD; i++ )); do [[ \${COMP_WORDS[i]} == --config ]] && config="\${COMP_WORDS[i+1]}"; done\n      [[ -n $config ]] && COMPREPLY=( $(compgen -W "$(lastgood __targets --config "$config" 2>/dev/null)" -- "$cur") )\n      return ;;\n` : ''}${[...choices].map(([flag, values]) => `    ${flag})\n      COMPREPLY=( $(compgen -W "${values.join(' ')}" -- "$cur") ); return ;;\n`).join('')}${valueFlags.length ? `    ${valueFlags.join('|')})\n      return ;;\n` : ''}  esac
  case "\${COMP_WORDS[1]}" in
${commands.map((c) => `    ${c.name})\n      COMPREPLY=( $(compgen -W "${[...c.options.map((o) => o.flag), '--help'].join(' ')}" -- "$cur") )${c.fileArguments ? '\n      [[ $cur != -* ]] && COMPREPLY+=( $(compgen -f -- "$cur") )' : ''}${c.argumentChoices ? `\n      [[ $cur != -* ]] && COMPREPLY=( $(compgen -W "${c.argumentChoices.join(' ')}" -- "$cur") )` : ''} ;;`).join('\n')}
  esac
}
complete -o default -F _lastgood lastgood
`;
}

function zsh(commands: CompletionCommand[]): string {
  // zsh runs bash completion functions through bashcompinit (zsh's own compatibility layer)
  return `#compdef lastgood
# lastgood completion for zsh: source <(lastgood completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bash(commands).split('\n').slice(1).join('\n')}`;
}

function fish(commands: CompletionCommand[]): string {
  const lines = [
    '# lastgood completion for fish: lastgood completion fish > ~/.config/fish/completions/lastgood.fish',
    'complete -c lastgood -f',
    // the --config typed so far, for the target names
    'function __lastgood_targets; set -l words (commandline -opc); set -l i (contains -i -- --config $words); and lastgood __targets --config $words[(math $i + 1)] 2>/dev/null; end',
  ];
  for (const c of commands) lines.push(`complete -c lastgood -n __fish_use_subcommand -a ${c.name} -d ${quoteSingle(c.description)}`);
  for (const c of commands) {
    const when = `-n ${quoteSingle(`__fish_seen_subcommand_from ${c.name}`)}`;
    if (c.fileArguments) lines.push(`complete -c lastgood ${when} -F`);
    if (c.argumentChoices) lines.push(`complete -c lastgood ${when} -x -a ${quoteSingle(c.argumentChoices.join(' '))}`);
    for (const o of c.options) {
      const value = o.choices ? ` -x -a ${quoteSingle(o.choices.join(' '))}` : o.dir ? " -x -a '(__fish_complete_directories)'" : o.target ? " -x -a '(__lastgood_targets)'" : o.file ? ' -r -F' : o.value ? ' -x' : '';
      lines.push(`complete -c lastgood ${when} -l ${o.flag.replace(/^--/, '')}${value} -d ${quoteSingle(o.description)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
