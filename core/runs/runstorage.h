#pragma once

#include <cstdint>
#include <string>

namespace trainlab {

// What a runs folder holds on disk; a hard-linked best.pt is counted once.
struct RunsFolderUsage
{
    int runs = 0;
    std::uint64_t totalBytes = 0;
    std::uint64_t checkpointBytes = 0;   // checkpoint.pt and best.pt of every run
};
RunsFolderUsage runsFolderUsage(const std::string &runsDir);

// Removes a run's checkpoint.pt and best.pt and records in summary.json that it has none; config,
// metrics and summary stay. Refused (runtime_error naming the folder) while a process holds the run.
// Returns the bytes freed.
std::uint64_t deleteCheckpoints(const std::string &runDir);

// Deletes a run folder and everything in it. Refused (runtime_error naming the folder) while a process holds
// the run; a run folder that is a symbolic link loses only the link, and no link inside is ever followed.
void deleteRun(const std::string &runDir);
// Moves a run folder whole to the desktop's trash (freedesktop.org's Trash spec), with the .trashinfo a file
// manager restores it by, and returns where it went ("…/Trash/files/NAME", NAME.2 when taken). The trash is the
// home trash (dataHome()/Trash) on its file system, else that file system's own: $topdir/.Trash/$uid or
// $topdir/.Trash-$uid, as file managers do; nothing is ever copied. Held as deleteRun holds it: refused
// (runtime_error naming the folder, the run kept) while a process holds the run or no trash can be made; a link is
// moved itself, never its target.
std::string trashRun(const std::string &runDir);

// Throws runtime_error naming the folder unless it is a run folder: a directory, not a symbolic link, holding a
// regular summary.json.
void requireRunFolder(const std::string &dir);

// A person's notes on a run (what it tried, what it showed), in the run folder's notes.txt. TrainLab never writes
// them on its own, so they can be edited while the run trains, and no run file depends on them.
constexpr std::size_t kMaxRunNotesBytes = 16 * 1024;
// "" when the run has none; throws runtime_error naming notes.txt when it cannot be read or is not UTF-8 text.
std::string readRunNotes(const std::string &runDir);
// The notes' first line, trimmed, for a table cell: at most maxChars characters, "…" when more is left out
// (a longer line or more lines).
std::string notesHeadline(const std::string &notes, std::size_t maxChars);
// Checks notes as writeRunNotes would take them; throws invalid_argument beginning "notes: " with what is wrong.
void checkRunNotes(const std::string &notes);
// Replaces the run's notes atomically (trailing white space dropped); blank notes remove notes.txt. Refused
// (runtime_error naming the folder) where requireRunFolder refuses it.
void writeRunNotes(const std::string &runDir, const std::string &notes);

// An exclusive lock on a folder (a sweep's, a run's) while the object lives, so two processes never run it at once
// and no run is moved or deleted while a process holds it. The folder is opened without following a link.
class FolderLock
{
public:
    // Throws runtime_error naming the folder when it cannot be opened, or "DIR: inUse" when another process holds it.
    explicit FolderLock(const std::string &dir, const char *inUse = "in use by another TrainLab process; it runs there, not twice");
    ~FolderLock();
    FolderLock(const FolderLock &) = delete;
    FolderLock &operator=(const FolderLock &) = delete;
    int fd() const { return m_fd; }

private:
    int m_fd = -1;
};

// "540 MB", "1.2 GB", "800 KB"
std::string formatBytes(std::uint64_t bytes);

} // namespace trainlab
